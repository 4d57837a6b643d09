#include "cli/model_commands.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/matrix_file.h"
#include "cli/progress.h"
#include "common/display_text.h"
#include "common/process_spawn.h"

namespace benchfleet::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int fail(Console& console, const Error& error) {
  console.err << "benchfleet: " << error.message << "\n";
  return kExitError;
}

CLI::App* command(CLI::App& parent, const std::string& name, const std::string& help) {
  CLI::App* c = parent.add_subcommand(name, help);
  c->fallthrough();  // global options (--url, ...) may follow
  return c;
}

// `dir` as an uncompressed tar of its contents (the directory's own name left out), in a
// temporary file the caller removes.
Result<std::string> tar_directory(const std::string& dir) {
  const fs::path out = fs::temp_directory_path() / ("benchfleet-artifact-" + std::to_string(::getpid()) + ".tar");
  if (auto made = run_to_end({"tar", "--create", "--file", out.string(), "--directory", dir, "--owner=0", "--group=0",
                              "--numeric-owner", "."},
                             out.string() + ".log");
      !made.ok()) {
    std::error_code ignored;
    fs::remove(out, ignored);
    return Error::invalid("", "cannot tar " + dir + ": " + made.error().message);
  }
  return out.string();
}

std::string model_line(const json& m) {
  std::string line = m.value("key", m.value("id", "?")) + "  " + m.value("display_name", "?") + "  source " +
                     m.value("source", "?") + "  " + m.value("digest", "");
  if (m.value("retired", false)) line += "  (retired)";
  return line;
}

}  // namespace

ModelCommands::ModelCommands(CLI::App& app, CLI::App& models) {
  add_ = command(models, "add",
                 "Register a model from a definition file (YAML or JSON; docs/models.md): a Hugging Face\n"
                 "checkpoint, a torchvision or timm name, a Python factory or an exported program. The\n"
                 "same definition again changes nothing; a new one for a model with results needs\n"
                 "--new-version (the old one is kept with its results).");
  add_->add_option("file", file_, "the definition file")->required();
  add_->add_flag("--new-version", new_version_, "register the next version of a model that has results");
  show_ = command(models, "show", "One model: its definition, versions, digest and how many results it has.");
  show_->add_option("id", id_, "model id, versioned key (id@2) or short name")->required();
  rm_ = command(models, "rm",
                "Remove a model that has no results; --retire keeps one with results (and them) but refuses new "
                "runs of it.");
  rm_->add_option("id", id_, "model id")->required();
  rm_->add_flag("--retire", retire_, "retire instead: keep the definitions and results");
  for (CLI::App* c : {add_, show_, rm_}) c->add_flag("--json", json_, "print the API's JSON");

  artifacts_ = command(app, "artifacts", "List the uploaded model artifacts (files models are built from).");
  artifacts_->add_flag("--json", json_, "print the API's JSON");
  artifacts_add_ =
      command(*artifacts_, "add",
              "Upload a file (weights, a factory's .py, an exported .pt2), or a checkpoint directory as a\n"
              "tar, and print its digest for a definition's `artifact`. Streamed: never held in memory.");
  artifacts_add_->add_option("path", path_, "the file or directory")->required()->check(CLI::ExistingPath);
  artifacts_add_->add_option("--name", name_, "what to call it (default: the file or directory name)");
  artifacts_add_->add_flag("--json", json_, "print the API's JSON");
}

std::optional<int> ModelCommands::run(FleetClient& client, Console& console) const {
  if (add_->parsed()) return add(client, console);
  if (artifacts_add_->parsed()) return upload(client, console);
  if (show_->parsed()) {
    auto m = client.model(id_);
    if (!m.ok()) return fail(console, m.error());
    if (json_) {
      console.out << m->dump(2) << "\n";
      return kExitOk;
    }
    console.out << model_line(*m) << "\n"
                << "results: " << m->value("results", 0) << "\n"
                << "versions:";
    for (const json& v : m->value("versions", json::array())) console.out << " " << v.value("version", 0);
    console.out << "\ndefinition:\n" << m->value("definition", json::object()).dump(2) << "\n";
    return kExitOk;
  }
  if (rm_->parsed()) {
    auto r = client.delete_model(id_, retire_);
    if (!r.ok()) return fail(console, r.error());
    console.out << (json_ ? r->dump(2) : "model " + id_ + " " + r->value("outcome", std::string("removed"))) << "\n";
    return kExitOk;
  }
  if (artifacts_->parsed()) {
    auto list = client.artifacts();
    if (!list.ok()) return fail(console, list.error());
    if (json_) {
      console.out << list->dump(2) << "\n";
      return kExitOk;
    }
    for (const json& a : list->value("artifacts", json::array())) {
      console.out << a.value("digest", "?") << "  " << a.value("kind", "?") << "  " << a.value("size", 0) << " bytes  "
                  << a.value("name", "") << "\n";
    }
    return kExitOk;
  }
  return std::nullopt;
}

int ModelCommands::add(FleetClient& client, Console& console) const {
  std::ifstream in(file_, std::ios::binary);
  if (!in) return fail(console, Error::not_found("cannot read " + file_));
  std::stringstream text;
  text << in.rdbuf();
  auto document = yaml_to_json(text.str());
  if (!document.ok()) return fail(console, Error::invalid("", file_ + ": " + document.error().message));
  auto registered = client.register_model(document->json, new_version_);
  if (!registered.ok()) {
    Error e = registered.error();
    if (!e.field.empty()) e.message = file_ + ": line " + std::to_string(document->line_of(e.field)) + ": " + e.message;
    return fail(console, e);
  }
  if (json_) {
    console.out << registered->dump(2) << "\n";
    return kExitOk;
  }
  const std::string outcome = registered->value("outcome", std::string("created"));
  console.out << "model " << registered->value("key", std::string("?")) << " (version "
              << registered->value("version", 1) << "): " << outcome << ", " << registered->value("digest", "") << "\n";
  return kExitOk;
}

int ModelCommands::upload(FleetClient& client, Console& console) const {
  const bool directory = fs::is_directory(path_);
  std::string file = path_;
  if (directory) {
    auto tar = tar_directory(path_);
    if (!tar.ok()) return fail(console, tar.error());
    file = *tar;
  }
  const std::string name = name_.empty() ? fs::path(path_).lexically_normal().filename().string() : name_;
  auto uploaded = client.upload_artifact(file, directory ? "tar" : "file", name.empty() ? path_ : name);
  if (directory) {
    std::error_code ignored;
    fs::remove(file, ignored);
  }
  if (!uploaded.ok()) return fail(console, uploaded.error());
  if (json_) {
    console.out << uploaded->dump(2) << "\n";
  } else {
    console.out << uploaded->value("digest", "?") << "  (" << uploaded->value("size", 0) << " bytes, "
                << (directory ? "a tar of " : "") << escape_display_text(path_) << ")\n";
  }
  return kExitOk;
}

}  // namespace benchfleet::cli
