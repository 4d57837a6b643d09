// this_build(): what the LibTorch this worker is compiled against can do.
#include <torch/version.h>

#include "agent/worker/capabilities.h"
#include "agent/worker/cuda.h"

namespace benchfleet::worker {

Capabilities this_build() {
  Capabilities c;
  c.torch_version = TORCH_VERSION;
  c.aoti = BENCHFLEET_HAVE_AOTI != 0;
  c.aoti_cuda_graphs = c.aoti && BENCHFLEET_AOTI_SINGLE_THREADED != 0;
  c.cuda_compiled = cuda::compiled();
  c.cuda_available = c.cuda_compiled && cuda::available();
  return c;
}

}  // namespace benchfleet::worker
