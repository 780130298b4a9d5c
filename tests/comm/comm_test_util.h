// Helpers shared by the comm tests (local and MPI): typed buffers in f32/f16/bf16, the
// closed-form test data, and checks every transport must pass.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/algorithm.h"
#include "comm/communicator.h"
#include "core/timer.h"
#include "tensor/dtype.h"

namespace dtrain::comm::testing {

// Tests use a short collective timeout, so a broken algorithm fails in seconds rather than
// after the 300 s default.
inline CommOptions test_options(std::size_t chunk_bytes = kDefaultChunkBytes) {
  CommOptions o;
  o.timeout_seconds = 20;
  o.chunk_bytes = chunk_bytes;
  return o;
}

// A buffer of `count` elements of `dtype`, filled from floats (rounded to the dtype).
struct TypedBuffer {
  DType dtype = DType::kF32;
  std::vector<std::byte> bytes;

  TypedBuffer(DType t, const std::vector<float>& values) : dtype(t), bytes(values.size() * dtype_size(t)) {
    for (std::size_t i = 0; i < values.size(); ++i) set(i, values[i]);
  }
  std::size_t count() const { return bytes.size() / dtype_size(dtype); }
  void* data() { return bytes.data(); }
  void set(std::size_t i, float v) {
    if (dtype == DType::kF32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      const std::uint16_t h = dtype == DType::kF16 ? f32_to_f16(v) : f32_to_bf16(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  float get(std::size_t i) const {
    if (dtype == DType::kF32) {
      float v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      return v;
    }
    std::uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
};

// Integer-valued data with a closed-form sum: rank r holds (r + 1) * s(i), s(i) = i % 7 - 3, so
// the sum over p ranks is s(i) * p(p+1)/2. |values| and partial sums stay <= 3 * 45 = 135 for
// p <= 9: exact in f32, f16 (<= 2048) and bf16 (<= 256).
inline float closed_form_value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * (static_cast<int>(i % 7) - 3));
}
inline float closed_form_sum(int p, std::size_t i) {
  return static_cast<float>((static_cast<int>(i % 7) - 3) * p * (p + 1) / 2);
}
inline std::vector<float> closed_form_data(int rank, std::size_t count) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = closed_form_value(rank, i);
  return v;
}

// The element counts every collective test sweeps for p ranks.
inline std::vector<std::size_t> test_counts(int p) {
  std::vector<std::size_t> counts = {
      0, 1, static_cast<std::size_t>(p - 1), static_cast<std::size_t>(p + 1), 1000, std::size_t{1} << 20};
  return counts;
}

inline std::string label(Algorithm a, DType t) {
  return std::string(algorithm_name(a)) + "_" + std::string(dtype_name(t));
}

// Transport::test on ranks 0 and 1: false while the message cannot have arrived (rank 0 sends only
// after rank 1's test), then true once it has, with the data in place; true again on the completed
// request, which waitall then leaves alone. Other ranks take no part.
inline void expect_test_completes_only_finished_requests(Transport& t) {
  constexpr int kTag = 5;
  int value = 0;
  char go = 1;
  const Deadline deadline = Deadline::after(20);
  if (t.rank() == 0) {
    t.recv(&go, 1, 1, kTag, deadline, "test go");
    value = 42;
    t.send(&value, sizeof value, 1, kTag, deadline, "test send");
  } else if (t.rank() == 1) {
    Request r = t.irecv(&value, sizeof value, 0, kTag);
    EXPECT_FALSE(t.test(r, "test recv")) << "completed before rank 0 sent";
    EXPECT_FALSE(r.done);
    t.send(&go, 1, 0, kTag, deadline, "test go");
    const Stopwatch watch;
    while (!t.test(r, "test recv")) {
      ASSERT_LT(watch.seconds(), 20.0) << "test never saw the message arrive";
      std::this_thread::yield();
    }
    EXPECT_TRUE(r.done);
    EXPECT_EQ(value, 42);
    EXPECT_TRUE(t.test(r, "test recv"));
    Request again[1] = {r};
    t.waitall(again, deadline, "test recv");
  }
}

}  // namespace dtrain::comm::testing
