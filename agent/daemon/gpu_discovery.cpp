#include "agent/daemon/gpu_discovery.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <memory>
#include <sstream>

namespace benchfleet::agent {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<std::vector<GpuInfo>> parse_nvidia_smi(std::string_view csv) {
  std::vector<GpuInfo> gpus;
  std::istringstream lines{std::string(csv)};
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (trim(line).empty()) continue;
    std::vector<std::string> fields;
    std::istringstream parts(line);
    std::string field;
    while (std::getline(parts, field, ',')) fields.push_back(trim(field));
    const std::string where = "nvidia-smi line " + std::to_string(number);
    if (fields.size() != 6)
      return Error::invalid(where, "expected 6 comma-separated fields, got " + std::to_string(fields.size()));
    GpuInfo g;
    try {
      g.index = std::stoi(fields[0]);
      g.memory_mb = fields[3] == "[N/A]" ? 0 : std::stoll(fields[3]);
    } catch (const std::exception&) {
      return Error::invalid(where, "index and memory.total must be numbers: " + line);
    }
    g.uuid = fields[1];
    g.name = fields[2];
    g.driver = fields[4];
    g.compute_capability = fields[5];
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::string gpu_class_for(std::string_view device_name) {
  const std::string name = lower(device_name);
  // Known data-centre parts, matched as whole words ("l4" is not "l40s", "h200" is not "gh200");
  // where one name is a prefix of another the longer one comes first.
  static constexpr std::array<std::string_view, 14> kKnown = {"h200", "h100", "gh200", "b200", "a100", "a800", "a10g",
                                                              "a40",  "a30",  "l40s",  "l40",  "l4",   "v100", "t4"};
  for (std::string_view k : kKnown) {
    const auto pos = name.find(k);
    if (pos == std::string::npos) continue;
    const std::size_t end = pos + k.size();
    if (end < name.size() && std::isalnum(static_cast<unsigned char>(name[end]))) continue;
    if (pos > 0 && std::isalnum(static_cast<unsigned char>(name[pos - 1]))) continue;
    return std::string(k);
  }
  if (name.find("a10") != std::string::npos) return "a10";
  std::string out;
  std::istringstream words(name);
  std::string word;
  while (words >> word) {
    if (word == "nvidia" || word == "tesla") continue;
    std::string clean;
    for (char c : word) {
      if (std::isalnum(static_cast<unsigned char>(c)))
        clean += c;
      else if (c == '-' || c == '_')
        clean += '-';
    }
    if (clean.empty()) continue;
    if (!out.empty()) out += '-';
    out += clean;
  }
  if (out.empty()) out = "gpu";
  if (!std::isalnum(static_cast<unsigned char>(out[0]))) out = "gpu-" + out;
  return out.substr(0, 64);
}

Discovery discover_gpus() {
  Discovery d;
  const std::string command = std::string("nvidia-smi ") + std::string(kNvidiaSmiQuery) + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) {
    d.note = "cannot run nvidia-smi";
    return d;
  }
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) output += buffer.data();
  const int status = pclose(pipe.release());
  if (status != 0) {
    d.note = "nvidia-smi failed (no NVIDIA driver?): " + trim(output).substr(0, 200);
    return d;
  }
  auto parsed = parse_nvidia_smi(output);
  if (!parsed.ok()) {
    d.note = "cannot parse nvidia-smi output: " + parsed.error().describe();
    return d;
  }
  d.gpus = std::move(*parsed);
  if (d.gpus.empty()) d.note = "nvidia-smi lists no GPUs";
  return d;
}

std::vector<SlotDescriptor> slots_for(const std::vector<GpuInfo>& gpus, const std::vector<std::string>& selected,
                                      std::optional<std::int64_t> memory_limit_mb) {
  std::vector<SlotDescriptor> slots;
  for (const auto& g : gpus) {
    const bool wanted = selected.empty() || std::find(selected.begin(), selected.end(), g.uuid) != selected.end() ||
                        std::find(selected.begin(), selected.end(), std::to_string(g.index)) != selected.end();
    if (!wanted) continue;
    slots.push_back({"gpu" + std::to_string(g.index), gpu_class_for(g.name), g, memory_limit_mb});
  }
  if (slots.empty()) slots.push_back({"cpu", "cpu", std::nullopt, memory_limit_mb});
  return slots;
}

}  // namespace benchfleet::agent
