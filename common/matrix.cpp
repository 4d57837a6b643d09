#include "common/matrix.h"

#include <algorithm>

namespace benchfleet {

Status resolve_models(MatrixSpec& spec, const Catalog& catalog) {
  for (std::size_t i = 0; i < spec.models.size(); ++i) {
    BF_ASSIGN_OR_RETURN(spec.models[i], catalog.resolve_id(spec.models[i], "models[" + std::to_string(i) + "]"));
  }
  return Status::Ok();
}

Result<std::vector<JobSpec>> expand_matrix(const MatrixSpec& spec, const Catalog& catalog,
                                           const ExpansionLimits& limits) {
  for (std::size_t i = 0; i < spec.models.size(); ++i) {
    const CatalogModel* model = catalog.find(spec.models[i]);
    if (model == nullptr) {
      std::string message = "unknown model \"";
      message += spec.models[i];
      message += "\" (not in the model catalog; GET /api/v1/models lists the known ids)";
      return Error::invalid("models[" + std::to_string(i) + "]", std::move(message));
    }
    if (model->retired) {
      return Error::invalid("models[" + std::to_string(i) + "]",
                            "model \"" + model->id +
                                "\" is retired: kept with its results, it runs no more (register "
                                "its definition again to run it)");
    }
  }
  // A shape walk calls the compiled model at every batch size in one process (its lease lists
  // them): bounded for submits and schedules alike.
  if (spec.shape_walk && spec.batch_sizes.size() > kMaxWalkBatches) {
    return Error::invalid("batch_sizes", "a shape_walk matrix may have at most " + std::to_string(kMaxWalkBatches) +
                                             " batch sizes, got " + std::to_string(spec.batch_sizes.size()));
  }
  // Multiply with overflow in mind: each axis is at most 1000 long, repetitions at most 100.
  const std::int64_t cells =
      static_cast<std::int64_t>(spec.models.size()) * static_cast<std::int64_t>(spec.batch_sizes.size()) *
      static_cast<std::int64_t>(spec.modes.size()) * static_cast<std::int64_t>(spec.torch_builds.size()) *
      static_cast<std::int64_t>(spec.gpus.size()) * static_cast<std::int64_t>(spec.runtimes.size()) *
      static_cast<std::int64_t>(spec.dtypes.size()) * spec.repetitions;
  if (cells > limits.max_cells) {
    std::string message = "the matrix expands to ";
    message += std::to_string(cells);
    message +=
        " jobs (models x batch_sizes x modes x torch_builds x gpus x runtimes x dtypes x repetitions), more than ";
    message += "the limit of ";
    message += std::to_string(limits.max_cells);
    return Error::invalid("models", std::move(message));
  }

  std::vector<int> batches = spec.batch_sizes;
  std::sort(batches.begin(), batches.end());

  std::vector<JobSpec> jobs;
  jobs.reserve(static_cast<std::size_t>(cells));
  for (int rep = 0; rep < spec.repetitions; ++rep) {
    for (const auto& gpu : spec.gpus) {
      for (const auto& build : spec.torch_builds) {
        for (Runtime runtime : spec.runtimes) {
          for (const auto& model : spec.models) {
            for (int batch : batches) {
              for (Dtype dtype : spec.dtypes) {
                for (Mode mode : spec.modes) {
                  jobs.push_back(JobSpec{model, batch, mode, build, gpu, runtime, rep, dtype});
                }
              }
            }
          }
        }
      }
    }
  }
  return jobs;
}

std::string group_key(std::int64_t run_id, const JobSpec& job) {
  std::string key = std::to_string(run_id);
  for (std::string_view part : {std::string_view(job.model), std::string_view(job.torch_build),
                                std::string_view(job.gpu), to_string(job.runtime), to_string(job.dtype)}) {
    key += '|';
    key += part;
  }
  key += '|';
  key += std::to_string(job.batch);
  key += '|';
  key += std::to_string(job.repetition);
  return key;
}

}  // namespace benchfleet
