// Text views of the API's JSON for the terminal: aligned tables for runs and agents, a run's
// details, one line per result. Pure functions; members a view does not know are ignored and a
// missing member shows as "?" rather than failing the command.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace benchfleet::cli {

// Member `key` of `j` as a table cell: a string as it is, a number as JSON writes it, yes/no for a
// boolean, "-" when missing or null, "?" for an array or object.
std::string member_text(const nlohmann::json& j, const char* key);

// Columns padded to their widest cell (UTF-8 aware), two spaces apart, a header row first.
std::string render_text_table(const std::vector<std::string>& headers,
                              const std::vector<std::vector<std::string>>& rows);

// RunList -> "ID  NAME  STATE  PROGRESS  RESULTS  GPUS  BUILDS  CREATED".
std::string runs_view(const nlohmann::json& run_list);
// Run -> key/value lines: matrix dimensions, job and result counts, timestamps.
std::string run_view(const nlohmann::json& run);
// AgentList -> "ID  NAME  HOST  SLOTS  BUILDS  LAST SEEN  STATE  JOBS".
std::string agents_view(const nlohmann::json& agent_list);
// ResultRow -> "ok           torchvision/resnet18  batch 4  torchscript  local/cpu/libtorch  12.345 ms";
// a dtype other than float32 follows the runtime ("local/cpu/python/bfloat16"), then the
// accuracy verdict ("accuracy wrong (0.049 > 0.0001)") and noise flags ("flagged high_cv").
std::string result_line(const nlohmann::json& row);

}  // namespace benchfleet::cli
