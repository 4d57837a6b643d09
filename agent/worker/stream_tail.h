// The last bytes written to a C++ stream (std::cerr), kept while they still pass through.
//
// Some LibTorch failures carry their cause only on std::cerr: AOTInductor's runtime turns the
// exception of a failed allocation into an error code, prints it ("Exception in aoti_torch:
// ... DefaultCPUAllocator: can't allocate memory ...", "Error: ..."), and the loader then throws
// just "run_func_(...) API call failed at ...". With the tail the worker can still tell an
// out-of-memory from another failure.
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>

namespace benchfleet::worker {

class StreamTail {
 public:
  // Interposes on `stream`'s buffer; everything written still reaches the previous buffer, in
  // order. The tail's storage is allocated here, so writes under a memory cap allocate nothing.
  // REQUIRES: at most one StreamTail per stream at a time; `stream` outlives it.
  StreamTail(std::ostream& stream, std::size_t capacity);
  ~StreamTail();  // restores the stream's previous buffer
  StreamTail(const StreamTail&) = delete;
  StreamTail& operator=(const StreamTail&) = delete;

  // The last `capacity` bytes written so far (allocates: call it outside a memory cap).
  // Thread-safe with writers.
  std::string text() const;

 private:
  class Buffer;
  std::ostream& stream_;
  std::unique_ptr<Buffer> buffer_;
  std::streambuf* previous_;
};

}  // namespace benchfleet::worker
