#include "train/bn_statistics.h"

#include <charconv>

#include "core/timer.h"
#include "nn/batch_norm.h"

namespace dtrain {

BnStatisticsConfig parse_bn_statistics(const std::string& text) {
  BnStatisticsConfig c;
  if (text == "running") return c;
  if (text == "last-batch") {
    c.mode = BnStatistics::kLastBatch;
    return c;
  }
  const std::string population = "population";
  if (text.rfind(population, 0) == 0) {
    c.mode = BnStatistics::kPopulation;
    if (text.size() == population.size()) return c;
    const char* first = text.data() + population.size() + 1;
    const char* last = text.data() + text.size();
    const auto [end, error] = std::from_chars(first, last, c.population_batches);
    if (text[population.size()] == ':' && error == std::errc() && end == last && c.population_batches > 0) return c;
  }
  throw InputError(fmt::format(
      "--bn-stats must be running, last-batch, population or population:N (N batches, N >= 1), got '{}'", text));
}

std::string bn_statistics_name(const BnStatisticsConfig& c) {
  switch (c.mode) {
    case BnStatistics::kRunning:
      return "running";
    case BnStatistics::kLastBatch:
      return "last-batch";
    case BnStatistics::kPopulation:
      return c.population_batches > 0 ? fmt::format("population:{}", c.population_batches) : "population";
  }
  return "running";
}

void keep_last_batch_statistics(Module& model) {
  for (BatchNorm* bn : batch_norms(model)) bn->set_momentum(1.0);
}

void average_statistics_over_ranks(Module& model, const ops::SumOverRanks& sum, int world) {
  if (!sum || world <= 1) return;
  std::vector<double> all;
  const std::vector<BatchNorm*> layers = batch_norms(model);
  for (BatchNorm* bn : layers) {
    for (const Tensor* t : {&bn->running_mean(), &bn->running_var()}) {
      for (float v : t->to_vector()) all.push_back(v);
    }
  }
  sum(all);
  std::size_t at = 0;
  for (BatchNorm* bn : layers) {
    for (Tensor* t : {&bn->running_mean(), &bn->running_var()}) {
      float* p = t->data<float>();
      for (std::int64_t c = 0; c < t->numel(); ++c) p[c] = static_cast<float>(all[at++] / world);
    }
  }
}

std::int64_t recompute_population_statistics(Module& model, const Dataset& data, const PopulationPass& pass,
                                             const ops::SumOverRanks& sum) {
  DT_CHECK(pass.chunk >= 1 && pass.world >= 1 && pass.rank >= 0 && pass.rank < pass.world, "population pass {} of {}",
           pass.rank, pass.world);
  const std::vector<BatchNorm*> layers = batch_norms(model);
  std::vector<ops::BatchNormMoments> moments(layers.size());
  std::vector<ops::SumOverRanks> syncs;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto c = static_cast<std::size_t>(layers[i]->channels());
    moments[i].sum.assign(c, 0.0);  // sized also on a rank that runs no chunk
    moments[i].sum_sq.assign(c, 0.0);
    syncs.push_back(layers[i]->state().sync);
    layers[i]->set_sync({});  // ranks run different numbers of chunks: no collective inside
    layers[i]->collect_moments(&moments[i]);
  }
  const std::int64_t group = layers.empty() ? 0 : layers.front()->state().group;
  const std::int64_t n = data.size();
  const std::int64_t all_chunks = (n + pass.chunk - 1) / pass.chunk;
  const std::int64_t chunks = pass.chunks > 0 ? std::min(pass.chunks, all_chunks) : all_chunks;
  std::vector<std::vector<std::int64_t>> mine;
  double samples = 0;
  for (std::int64_t j = pass.rank; j < chunks; j += pass.world) {
    std::int64_t end = std::min(n, (j + 1) * pass.chunk);
    if (group > 0) end -= (end - j * pass.chunk) % group;  // a shorter last chunk keeps whole ghost groups
    if (end <= j * pass.chunk) continue;
    std::vector<std::int64_t>& b = mine.emplace_back();
    for (std::int64_t i = j * pass.chunk; i < end; ++i) b.push_back(i);
    samples += static_cast<double>(b.size());
  }
  const bool was_training = model.training();
  model.train(true);
  try {
    NoGradGuard no_grad;
    Loader loader(data, std::move(mine), static_cast<std::int64_t>(pass.epoch), pass.loader);
    while (auto batch = loader.next()) (void)model(Variable(batch->x));
  } catch (...) {
    for (std::size_t i = 0; i < layers.size(); ++i) {
      layers[i]->collect_moments(nullptr);
      layers[i]->set_sync(syncs[i]);
    }
    throw;
  }
  model.train(was_training);
  std::vector<double> sums;
  for (const ops::BatchNormMoments& m : moments) {
    sums.insert(sums.end(), m.sum.begin(), m.sum.end());
    sums.insert(sums.end(), m.sum_sq.begin(), m.sum_sq.end());
    sums.push_back(m.count);
  }
  sums.push_back(samples);
  if (sum) sum(sums);
  std::size_t at = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    BatchNorm* bn = layers[i];
    const auto c = static_cast<std::size_t>(bn->channels());
    const double count = sums[at + 2 * c];
    float* mean = bn->running_mean().data<float>();
    float* var = bn->running_var().data<float>();
    for (std::size_t k = 0; k < c && count > 0; ++k) {
      const double mu = sums[at + k] / count;
      mean[k] = static_cast<float>(mu);
      var[k] = static_cast<float>(std::max(0.0, sums[at + c + k] / count - mu * mu));
    }
    at += 2 * c + 1;
    bn->collect_moments(nullptr);
    bn->set_sync(syncs[i]);
  }
  return static_cast<std::int64_t>(sums.back());
}

BnStatisticsExtension::BnStatisticsExtension(Module& model, const Dataset& data, BnStatisticsConfig config,
                                             PopulationPass pass, ops::SumOverRanks sum)
    : model_(model), data_(data), config_(config), pass_(std::move(pass)), sum_(std::move(sum)) {
  if (config_.mode == BnStatistics::kLastBatch) keep_last_batch_statistics(model_);
}

void BnStatisticsExtension::on_epoch_end(TrainerState& s) {
  Stopwatch sw;
  if (config_.mode == BnStatistics::kLastBatch) {
    average_statistics_over_ranks(model_, sum_, pass_.world);
  } else if (config_.mode == BnStatistics::kPopulation) {
    pass_.epoch = static_cast<std::uint64_t>(s.epoch);
    pass_.chunks = config_.population_batches;
    recompute_population_statistics(model_, data_, pass_, sum_);
  } else {
    return;
  }
  s.record["bn_stats_seconds"] = sw.seconds();
}

}  // namespace dtrain
