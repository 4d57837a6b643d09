// Internal to the store: how rows map to domain types. Column lists and readers live
// together so a query and its reader cannot drift apart.
#pragma once

#include <string>

#include "common/types.h"
#include "coordinator/store/sqlite.h"

namespace benchfleet::store {

// How many columns job_spec_columns lists: model, batch, mode, torch_build, gpu_class, runtime,
// repetition, dtype (in that order).
inline constexpr int kJobSpecColumns = 8;
// SELECT list of the JobSpec columns of `jobs` aliased as `alias`; read back with job_spec_at.
std::string job_spec_columns(const std::string& alias);
// Reads the kJobSpecColumns columns of job_spec_columns starting at column `first`.
JobSpec job_spec_at(const Statement& s, int first);

// Enum columns hold wire names; unknown text (a newer writer) maps to a safe default.
JobStatus job_status_at(const Statement& s, int col);
ResultStatus result_status_at(const Statement& s, int col);

}  // namespace benchfleet::store
