// Matrix expansion: a validated MatrixSpec becomes one JobSpec per cell and repetition.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/catalog.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet {

struct ExpansionLimits {
  std::int64_t max_cells = 100'000;  // jobs per run, repetitions included
};

// Replaces each model name with the catalog id it stands for (Catalog::resolve_id: "resnet18" ->
// "torchvision/resnet18"), so that a run stores and reports full ids. Errors name the field
// ("models[2]") with the nearest id or the ids a short name is ambiguous between.
Status resolve_models(MatrixSpec& spec, const Catalog& catalog);

// Checks what the codec cannot (catalog ids, the cell cap) and expands. Jobs come out in
// scheduling order: repetition, GPU, build, runtime, model, batch ascending, dtype, then mode
// innermost, so the modes of one (model, batch) sit together and small batches run first
// (an OOM at a small batch then prunes the larger ones before they run).
// Errors name the field: "models[2]: unknown model ..." or "repetitions: ... more than the limit".
Result<std::vector<JobSpec>> expand_matrix(const MatrixSpec& spec, const Catalog& catalog,
                                           const ExpansionLimits& limits);

// Jobs with equal group keys differ only in mode; the scheduler keeps a group on one slot.
std::string group_key(std::int64_t run_id, const JobSpec& job);

}  // namespace benchfleet
