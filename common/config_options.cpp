#include "common/config_options.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace benchfleet::config {

std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string env_of(const std::string& key) {
  std::string env = "BENCHFLEET_";
  for (char ch : key) env += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return env;
}

std::string config_path(int argc, char** argv, const char* env_var) {
  std::string path;
  if (const char* env = std::getenv(env_var)) path = env;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == "--config" || a == "-c") && i + 1 < argc) path = argv[i + 1];
    if (a.rfind("--config=", 0) == 0) path = std::string(a.substr(9));
  }
  return path;
}

Result<YAML::Node> parse_yaml_mapping(std::string_view text, std::string_view origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error::invalid("", std::string(origin) + ": malformed YAML: " + e.what());
  }
  if (!root.IsNull() && !root.IsMap()) {
    return Error::invalid("", std::string(origin) + ": must be a mapping of option: value");
  }
  return root;
}

Result<YAML::Node> load_yaml_mapping_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::invalid("config", "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_yaml_mapping(text.str(), path);
}

Status apply_yaml(const YAML::Node& root, std::string_view origin, const std::vector<Option>& options,
                  const std::set<std::string>& handled_elsewhere) {
  if (!root || root.IsNull()) return Status::Ok();
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    if (handled_elsewhere.contains(key)) continue;
    auto it = std::find_if(options.begin(), options.end(), [&](const Option& o) { return o.key == key; });
    if (it == options.end()) return Error::invalid(key, std::string(origin) + ": unknown option");
    BF_RETURN_IF_ERROR(it->from_yaml(kv.second, std::string(origin)));
  }
  return Status::Ok();
}

void add_options(CLI::App& app, const std::vector<Option>& options, std::string& config_file) {
  app.add_option("-c,--config", config_file, "YAML config file")->envname("BENCHFLEET_CONFIG");
  for (const auto& o : options) o.add(app, flag_of(o.key), env_of(o.key), o.help);
}

}  // namespace benchfleet::config
