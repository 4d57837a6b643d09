// The cells of a report's tables (report.h's Cell), built from the results of one matrix cell;
// used by build_report (report.cpp). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/stats.h"
#include "coordinator/rules/change_rule.h"
#include "coordinator/rules/report.h"

namespace benchfleet::rules {

inline constexpr std::string_view kOk = "ok";
inline constexpr std::string_view kNotRun = "not_run";

// The 95% CI of `stat` of one result: the bootstrap CI of the median, or the t interval of the
// mean (common/stats.h mean_ci_95), so that a cell's number and its interval are one statistic's.
Interval ci_of(const Statistics& st, Stat stat);
// The latency cell of `mode` from its repetitions' results (nullptr: none ran): their mean of
// `in.stat`, or the most telling status when none is ok, with accuracy, flags, compile time and
// peak memory over the ok ones.
Cell latency_cell(const std::vector<const CellResult*>* results, Mode mode, const ReportInput& in);
// A latency cell as the change rule judges it: its value, CI and each ok repetition's value.
rules::ChangeSide change_side(const Cell& latency);
// eager / compiled latency; unavailable unless both are ok. Its `change` is the change rule's
// verdict with `noise_floor` (rules/change_rule.h noise_floor of the table's device kind).
Cell speedup_cell(const Cell& eager, const Cell& compiled, Mode mode, double noise_floor);
// A compiled mode's compile time, from its latency cell.
Cell compile_cell(const Cell& latency);
// A mode's peak memory in MiB, from its latency cell.
Cell memory_cell(const Cell& latency);
// eager peak / compiled peak; unavailable unless both recorded one.
Cell memory_ratio_cell(const Cell& eager, const Cell& compiled, Mode mode);
// Whether an accuracy verdict says the compiled output is not to be trusted.
bool inaccurate(const std::optional<AccuracyVerdict>& v);
// "a, b, c".
std::string joined(const std::vector<std::string>& items);

}  // namespace benchfleet::rules
