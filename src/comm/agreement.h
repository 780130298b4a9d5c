// Start-up agreement: before training, all ranks check that they run the same configuration
// (model, algorithm, dtype, batch size, a hash of the parameter shapes, ...). Ranks that disagree
// would otherwise run mismatched collectives and fail much later, or silently train different
// models.
//
// Protocol (cannot hang on mismatched sizes: every message size is known to all ranks in advance):
//   1. allgather of a fixed 32-byte record per rank: a magic number (format version), a 64-bit
//      FNV-1a hash of the serialised name/value list, its length and its entry count. All equal:
//      done, one small collective.
//   2. otherwise, allgather of every rank's serialised list padded to the longest length seen in
//      step 1; each rank then computes the same report and throws the same CommError, e.g.
//      "ranks disagree on the configuration: batch: rank 0 has 64, rank 1 has 32".
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace dtrain::comm {

struct NamedValue {
  std::string name;
  std::string value;
};

// Returns when every rank passed the same values (names in the same order); otherwise throws
// CommError on every rank naming each value that differs and which ranks hold which value.
void check_agreement(Communicator& comm, std::span<const NamedValue> values);
inline void check_agreement(Communicator& comm, std::initializer_list<NamedValue> values) {
  check_agreement(comm, std::span<const NamedValue>(values.begin(), values.size()));
}

// 64-bit FNV-1a, stable across processes and builds (unlike std::hash): for fingerprints such as
// a hash of all parameter shapes.
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace dtrain::comm
