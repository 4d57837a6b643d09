#include "coordinator/store/rows.h"

namespace benchfleet::store {

std::string job_spec_columns(const std::string& a) {
  std::string out;
  for (const char* col : {"model", "batch", "mode", "torch_build", "gpu_class", "runtime", "repetition", "dtype"}) {
    if (!out.empty()) out += ", ";
    out += a;
    out += '.';
    out += col;
  }
  return out;
}

JobSpec job_spec_at(const Statement& s, int c) {
  JobSpec spec;
  spec.model = s.text(c);
  spec.batch = static_cast<int>(s.int64(c + 1));
  spec.mode = parse_mode(s.text(c + 2)).value_or(Mode::kEager);
  spec.torch_build = s.text(c + 3);
  spec.gpu = s.text(c + 4);
  spec.runtime = parse_runtime(s.text(c + 5)).value_or(Runtime::kLibtorch);
  spec.repetition = static_cast<int>(s.int64(c + 6));
  spec.dtype = parse_dtype(s.text(c + 7)).value_or(Dtype::kFloat32);
  return spec;
}

JobStatus job_status_at(const Statement& s, int col) {
  return parse_job_status(s.text(col)).value_or(JobStatus::kFailed);
}

ResultStatus result_status_at(const Statement& s, int col) {
  return parse_result_status(s.text(col)).value_or(ResultStatus::kInvalid);
}

}  // namespace benchfleet::store
