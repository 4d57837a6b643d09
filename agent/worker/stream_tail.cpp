#include "agent/worker/stream_tail.h"

#include <algorithm>
#include <mutex>
#include <streambuf>
#include <vector>

namespace benchfleet::worker {

// Unbuffered: every character goes to the previous buffer at once (std::cerr's ordering with
// stdio is kept) and into a ring of fixed size.
class StreamTail::Buffer final : public std::streambuf {
 public:
  Buffer(std::streambuf* forward, std::size_t capacity) : forward_(forward), ring_(capacity == 0 ? 1 : capacity) {}

  std::string text() const {
    std::lock_guard lock(mutex_);
    std::string out;
    out.reserve(size_);
    const std::size_t start = (head_ + ring_.size() - size_) % ring_.size();
    for (std::size_t i = 0; i < size_; ++i) out += ring_[(start + i) % ring_.size()];
    return out;
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    keep(&ch, 1);
    return forward_->sputc(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    keep(s, static_cast<std::size_t>(n));
    return forward_->sputn(s, n);
  }
  int sync() override { return forward_->pubsync(); }

 private:
  void keep(const char* s, std::size_t n) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < n; ++i) {
      ring_[head_] = s[i];
      head_ = (head_ + 1) % ring_.size();
    }
    size_ = std::min(ring_.size(), size_ + n);
  }

  std::streambuf* forward_;
  mutable std::mutex mutex_;
  std::vector<char> ring_;
  std::size_t head_ = 0;  // where the next byte goes
  std::size_t size_ = 0;  // bytes held (<= ring_.size())
};

StreamTail::StreamTail(std::ostream& stream, std::size_t capacity)
    : stream_(stream), buffer_(std::make_unique<Buffer>(stream.rdbuf(), capacity)), previous_(stream.rdbuf()) {
  stream_.rdbuf(buffer_.get());
}

StreamTail::~StreamTail() {
  stream_.flush();
  stream_.rdbuf(previous_);
}

std::string StreamTail::text() const { return buffer_->text(); }

}  // namespace benchfleet::worker
