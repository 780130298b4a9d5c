#include "comm/message_buffer.h"

#include <cstring>
#include <utility>

#include "tensor/allocator.h"

namespace dtrain::comm {

MessageBuffer::MessageBuffer(std::size_t bytes) : bytes_(huge_page_rounded(bytes)) {
  if (bytes_ == 0) return;
  data_ = static_cast<std::byte*>(cpu_allocator().allocate(bytes_));
  std::memset(data_, 0, bytes_);
}

MessageBuffer::~MessageBuffer() { release(); }

MessageBuffer::MessageBuffer(MessageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

MessageBuffer& MessageBuffer::operator=(MessageBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

std::byte* MessageBuffer::grow(std::size_t bytes) {
  if (bytes > bytes_) *this = MessageBuffer(bytes);
  return data_;
}

void MessageBuffer::release() {
  if (data_ != nullptr) cpu_allocator().deallocate(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace dtrain::comm
