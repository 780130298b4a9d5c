// Host memory that other processes on the host read and write through the transport: whole huge
// pages from the caching allocator (tensor/allocator.h: huge_page_rounded says why), zeroed,
// given back on destruction. The collectives' scratch, the benchmarks' and the calibration's
// buffers are these, as the trainer's gradient buckets are carved out of huge pages, so that all
// three move bytes at the same speed.
#pragma once

#include <cstddef>

namespace dtrain::comm {

class MessageBuffer {
 public:
  MessageBuffer() = default;
  explicit MessageBuffer(std::size_t bytes);
  ~MessageBuffer();
  MessageBuffer(MessageBuffer&& o) noexcept;
  MessageBuffer& operator=(MessageBuffer&& o) noexcept;
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }  // at least the bytes asked for
  // At least `bytes`: a larger buffer (zeroed) when this one is smaller, else this one as it is.
  std::byte* grow(std::size_t bytes);

 private:
  void release();
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace dtrain::comm
