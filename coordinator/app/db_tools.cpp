#include "coordinator/app/db_tools.h"

#include <iostream>
#include <string>
#include <string_view>

#include "coordinator/store/backup.h"

namespace benchfleet::app {
namespace {

constexpr std::string_view kUsage =
    "usage: benchfleet-coordinator backup --db DB --to FILE\n"
    "       benchfleet-coordinator restore --db DB --from FILE\n"
    "backup   copies the database DB to FILE through SQLite's online backup: one consistent snapshot,\n"
    "         taken while a coordinator serves DB (writers go on); FILE appears only once the copy\n"
    "         passed SQLite's quick_check. Every result acknowledged before it started is in it.\n"
    "restore  replaces DB with the backup FILE (checked: a benchfleet database that passes\n"
    "         integrity_check); refused while a coordinator serves DB (it holds DB.lock).\n";

}  // namespace

std::optional<int> run_db_tool(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string_view command = argv[1];
  if (command != "backup" && command != "restore") return std::nullopt;
  const std::string_view file_flag = command == "backup" ? "--to" : "--from";
  std::string db;
  std::string file;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (i + 1 < argc && arg == "--db") {
      db = argv[++i];
    } else if (i + 1 < argc && arg == file_flag) {
      file = argv[++i];
    } else {
      std::cerr << "benchfleet-coordinator " << command << ": unexpected argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (db.empty() || file.empty()) {
    std::cerr << "benchfleet-coordinator " << command << ": --db and " << file_flag << " are required\n" << kUsage;
    return 2;
  }
  const Status done = command == "backup" ? store::backup_database(db, file) : store::restore_database(file, db);
  if (!done.ok()) {
    std::cerr << "benchfleet-coordinator " << command << ": " << done.error().describe() << "\n";
    return 1;
  }
  std::cout << (command == "backup" ? "backed up " + db + " to " + file : "restored " + db + " from " + file) << "\n";
  return 0;
}

}  // namespace benchfleet::app
