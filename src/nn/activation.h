// Parameter-free layers: ReLU, dropout, flatten, pooling.
#pragma once

#include <cstdint>

#include "nn/module.h"
#include "tensor/backend.h"

namespace dtrain {

class ReLU : public Module {
 public:
  ReLU() : Module("relu") {}
  Variable forward(const Variable& x) override;
};

// Inverted dropout; each call draws a fresh mask from (seed, call count), so a run is
// reproducible and a checkpoint can restore the count.
class Dropout : public Module {
 public:
  Dropout(double p, std::uint64_t seed) : Module("dropout"), p_(p), seed_(seed) {}
  Variable forward(const Variable& x) override;
  std::uint64_t calls() const { return calls_; }
  void set_calls(std::uint64_t calls) { calls_ = calls; }

 private:
  double p_;
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
};

class Flatten : public Module {
 public:
  Flatten() : Module("flatten") {}
  Variable forward(const Variable& x) override;
};

class Pool2d : public Module {
 public:
  // kernel 0 means global pooling over the whole spatial extent.
  Pool2d(PoolKind kind, std::int64_t kernel, std::int64_t stride, std::int64_t padding = 0);
  Variable forward(const Variable& x) override;
  PoolKind kind() const { return kind_; }
  bool global() const { return global_; }
  const Pool2dGeometry& geometry() const { return geometry_; }

 private:
  PoolKind kind_;
  bool global_;
  Pool2dGeometry geometry_;
};

inline std::shared_ptr<Pool2d> max_pool(std::int64_t kernel, std::int64_t stride) {
  return std::make_shared<Pool2d>(PoolKind::kMax, kernel, stride);
}
inline std::shared_ptr<Pool2d> global_avg_pool() { return std::make_shared<Pool2d>(PoolKind::kAvg, 0, 0); }

}  // namespace dtrain
