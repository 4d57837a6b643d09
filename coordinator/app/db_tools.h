// The coordinator binary's database commands, run instead of serving:
//   benchfleet-coordinator backup --db DB --to FILE      a consistent copy, while a coordinator serves
//   benchfleet-coordinator restore --db DB --from FILE   refused while a coordinator serves DB
#pragma once

#include <optional>

namespace benchfleet::app {

// The exit code of the command when argv[1] names one (0 done, 1 failed, 2 usage); nullopt when
// it does not (the coordinator serves).
std::optional<int> run_db_tool(int argc, char** argv);

}  // namespace benchfleet::app
