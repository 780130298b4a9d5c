// Evaluation of a model on a dataset: mean loss and accuracy, in evaluation mode and without
// gradients. In data-parallel runs each rank evaluates its shard and `sum_across_ranks` adds the
// counts, so every test sample is counted exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "data/loader.h"
#include "nn/module.h"

namespace dtrain {

struct EvalResult {
  double loss = 0;      // mean over samples
  double accuracy = 0;  // fraction correct
  std::int64_t samples = 0;
  std::int64_t correct = 0;
  double seconds = 0;
};

// Sums a few doubles over all ranks in place (empty function: one process).
using SumAcrossRanks = std::function<void(std::vector<double>&)>;

EvalResult evaluate(Module& model, const Dataset& data, const Sampler& sampler, const LoaderOptions& options,
                    const SumAcrossRanks& sum_across_ranks = {});

}  // namespace dtrain
