#include "comm/message_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "tensor/allocator.h"

namespace dtrain::comm {
namespace {

bool all_zero(const MessageBuffer& b) {
  return std::all_of(b.data(), b.data() + b.size(), [](std::byte x) { return x == std::byte{0}; });
}

std::uintptr_t address(const MessageBuffer& b) { return reinterpret_cast<std::uintptr_t>(b.data()); }

TEST(MessageBuffer, WholeAlignedHugePagesZeroed) {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4096}, kHugePageBytes, kHugePageBytes + 1}) {
    MessageBuffer b(bytes);
    EXPECT_EQ(b.size(), huge_page_rounded(bytes)) << bytes;
    EXPECT_EQ(b.size() % kHugePageBytes, 0u);
    // A transparent huge page backs only a 2 MiB-aligned range.
    EXPECT_EQ(address(b) % kHugePageBytes, 0u) << bytes;
    EXPECT_TRUE(all_zero(b)) << bytes;
  }
  EXPECT_EQ(MessageBuffer(0).data(), nullptr);
  EXPECT_EQ(MessageBuffer().size(), 0u);
}

TEST(MessageBuffer, GrowKeepsABufferLargeEnoughAndReplacesASmallOne) {
  MessageBuffer b;
  std::byte* first = b.grow(100);
  ASSERT_NE(first, nullptr);
  first[0] = std::byte{7};
  EXPECT_EQ(b.grow(kHugePageBytes), first);  // fits: kept, contents too
  EXPECT_EQ(b.data()[0], std::byte{7});
  std::byte* second = b.grow(kHugePageBytes + 1);
  EXPECT_EQ(b.size(), 2 * kHugePageBytes);
  EXPECT_EQ(second[0], std::byte{0});  // a new, zeroed buffer
}

TEST(MessageBuffer, MovesHandOverTheMemoryAndGiveItBack) {
  const std::size_t in_use = cpu_allocator_stats().bytes_in_use;
  {
    MessageBuffer a(10);
    std::byte* p = a.data();
    MessageBuffer b(std::move(a));
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
    MessageBuffer c(20);
    c = std::move(b);
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(cpu_allocator_stats().bytes_in_use, in_use + kHugePageBytes);
  }
  EXPECT_EQ(cpu_allocator_stats().bytes_in_use, in_use);
}

}  // namespace
}  // namespace dtrain::comm
