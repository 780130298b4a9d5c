// Shared by the perfmodel tests: profiles with chosen constants, small layer lists, and the
// built-in profile folder of the source tree.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "nn/summary.h"
#include "perfmodel/profile.h"

namespace dtrain::perf::testing {

// Points the library at the source tree's profiles/ before anything reads them (static
// initialisation runs before the tests).
inline const bool kProfilesDirSet = [] {
  setenv("DTRAIN_PROFILES", DTRAIN_PROFILES_DIR, 0);
  return true;
}();

inline Quantity q(double v) { return Quantity{v, 0, 0, "test"}; }

// A device and links with round numbers; memory fast enough that local passes are negligible
// unless a test says otherwise.
inline Profile test_profile(int per_node = 1, double alpha = 1e-6, double bandwidth = 1e9, double reduce = 1e12,
                            double memory = 1e15) {
  Profile p;
  p.name = "test";
  p.device.name = "test device";
  for (Quantity& c : p.device.compute) c = q(1e12);
  p.device.memory_read = q(memory);
  p.device.memory_write = q(memory);
  p.device.update = q(1e10);
  p.device.reduce = q(reduce);
  p.node.accelerators = per_node;
  p.node.intra_link = {"intra", q(alpha / 10), q(bandwidth * 10), std::nullopt, std::nullopt, std::nullopt};
  p.node.disk_read = q(1e9);
  p.network = LinkProfile{"net", q(alpha), q(bandwidth), std::nullopt, std::nullopt, std::nullopt};
  return p;
}

inline LayerSummary layer(const std::string& path, const std::string& kind, std::int64_t params, double flops,
                          std::int64_t activations = 1000) {
  LayerSummary s;
  s.path = path;
  s.kind = kind;
  s.input = Shape{activations};
  s.output = Shape{activations};
  s.params = params;
  s.forward_flops = flops;
  s.backward_flops = 2 * flops;
  s.activation_bytes = 8.0 * static_cast<double>(activations);
  s.param_bytes = 4.0 * static_cast<double>(params);
  return s;
}

}  // namespace dtrain::perf::testing
