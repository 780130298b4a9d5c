// Helpers for the checkpoint tests: a temporary directory, file I/O, a small model with every kind
// of state a checkpoint holds (parameters, batch-norm statistics, a dropout counter), and bitwise
// snapshots of a model and optimizer.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/random.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "optim/optimizer.h"

#include "support/temp_dir.h"

namespace dtrain::cktest {

// A temporary directory named for these tests (tests/support/temp_dir.h).
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("dtrain-ckpt") {}
};

inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// 1 x side x side inputs -> classes: linear, batch norm, ReLU, dropout, linear.
inline std::shared_ptr<Sequential> small_model(std::uint64_t seed = 1, std::int64_t side = 8, std::int64_t hidden = 16,
                                               std::int64_t classes = 10) {
  Rng rng(seed);
  auto m = std::make_shared<Sequential>();
  m->add(std::make_shared<Flatten>());
  m->add(std::make_shared<Linear>(side * side, hidden, true, rng));
  m->add(std::make_shared<BatchNorm>(hidden));
  m->add(std::make_shared<ReLU>());
  m->add(std::make_shared<Dropout>(0.25, seed));
  m->add(std::make_shared<Linear>(hidden, classes, true, rng));
  return m;
}

// Every byte of the model's parameters and buffers, the optimizer's state and the counters.
inline std::vector<std::uint8_t> snapshot(const Module& model, Optimizer* optimizer = nullptr) {
  std::vector<std::uint8_t> out;
  auto add = [&out](const Tensor& t) {
    const auto* p = static_cast<const std::uint8_t*>(t.raw_data());
    out.insert(out.end(), p, p + t.nbytes());
  };
  for (const auto& [name, p] : model.named_parameters()) add(p.data());
  for (const auto& [name, b] : model.named_buffers()) add(b);
  for (const auto& [path, m] : model.named_modules()) {
    if (const auto* d = dynamic_cast<const Dropout*>(m)) {
      const std::uint64_t calls = d->calls();
      const auto* p = reinterpret_cast<const std::uint8_t*>(&calls);
      out.insert(out.end(), p, p + sizeof calls);
    }
  }
  if (optimizer != nullptr) {
    for (const auto& [name, t] : optimizer->state()) add(t);
    const std::int64_t steps = optimizer->steps();
    const auto* p = reinterpret_cast<const std::uint8_t*>(&steps);
    out.insert(out.end(), p, p + sizeof steps);
  }
  return out;
}

}  // namespace dtrain::cktest
