#include "schedule/job_pricing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "comm/algorithm.h"
#include "core/error.h"
#include "perfmodel/auto_choice.h"
#include "perfmodel/run_model.h"
#include "perfmodel/workload.h"

namespace dtrain::schedule {
namespace {

// One epoch of (model, dataset, batch per rank) at w ranks, with the model's exchange for w.
struct PricedEpoch {
  perf::RunPrediction run;
  std::string exchange;
};

// Prices each (model, dataset, batch, ranks) once: the jobs of a trace share a few models.
class EpochPrices {
 public:
  explicit EpochPrices(const perf::Profile& profile) : profile_(profile) {}

  const perf::Workload& workload(const Job& j) {
    auto key = std::make_pair(j.model, j.dataset);
    auto it = workloads_.find(key);
    if (it == workloads_.end()) it = workloads_.emplace(key, perf::describe_zoo_model(j.model, j.dataset)).first;
    return it->second;
  }

  const PricedEpoch& at(const Job& j, int ranks) {
    const auto key = std::make_tuple(j.model, j.dataset, j.batch, ranks);
    auto it = epochs_.find(key);
    if (it != epochs_.end()) return it->second;
    const perf::Workload& w = workload(j);
    const perf::DatasetInfo& d = perf::dataset_info(j.dataset);
    perf::RunConfig base;
    base.workers = ranks;
    base.batch_per_worker = j.batch;
    base.disk_bytes_per_sample = d.disk_bytes_per_sample;
    PricedEpoch p;
    if (ranks > 1) {
      const perf::AutoChoice choice = perf::choose_by_prediction(w, profile_, base, true, true);
      base = choice.chosen;
      const std::string_view algorithm = comm::algorithm_name(base.algorithm);
      p.exchange = base.bucket_bytes == 0
                       ? fmt::format("{}, one bucket per parameter", algorithm)
                       : fmt::format("{}, {} buckets", algorithm, perf::bucket_label(base.bucket_bytes));
    } else {
      p.exchange = "-";
    }
    p.run = perf::predict_run(w, d, profile_, base, 1);
    return epochs_.emplace(key, std::move(p)).first->second;
  }

 private:
  const perf::Profile& profile_;
  std::map<std::pair<std::string, std::string>, perf::Workload> workloads_;
  std::map<std::tuple<std::string, std::string, std::int64_t, int>, PricedEpoch> epochs_;
};

RankPrice rank_price(const Job& j, int ranks, const PricedEpoch& e) {
  const perf::RunPrediction& r = e.run;
  RankPrice p;
  p.ranks = ranks;
  p.step = r.step.step;
  p.compute = r.step.compute;
  p.other = std::max(0.0, p.step - p.compute);
  p.comm = r.step.comm;
  p.straggler = r.step.straggler;
  p.exchange = e.exchange;
  if (j.samples > 0) {
    const double per_step = static_cast<double>(ranks) * static_cast<double>(j.batch);
    p.steps = std::ceil(static_cast<double>(j.samples) / per_step);
    p.seconds = p.steps * p.step;
  } else {
    p.steps = static_cast<double>(j.epochs) * static_cast<double>(r.steps_per_epoch);
    p.eval_seconds = j.epochs * (r.eval_seconds + r.population_seconds);
    p.seconds = j.epochs * r.epoch_seconds;
  }
  return p;
}

}  // namespace

const RankPrice& JobPrice::at(int ranks) const {
  DT_CHECK(ranks >= min_ranks && ranks <= max_ranks, "{} ranks outside [{}, {}]", ranks, min_ranks, max_ranks);
  return by_ranks[static_cast<std::size_t>(ranks - min_ranks)];
}

int JobPrice::fastest_ranks() const {
  int best = min_ranks;
  for (const RankPrice& p : by_ranks) {
    if (p.seconds < seconds(best)) best = p.ranks;
  }
  return best;
}

PriceTable price_jobs(const std::vector<Job>& jobs, const Cluster& cluster, const perf::Profile& profile) {
  EpochPrices prices(profile);
  PriceTable table;
  for (const Job& j : jobs) {
    JobPrice price;
    price.min_ranks = j.min_ranks;
    price.max_ranks = j.max_ranks;
    try {
      for (int w = j.min_ranks; w <= j.max_ranks; ++w) price.by_ranks.push_back(rank_price(j, w, prices.at(j, w)));
      const double params = static_cast<double>(prices.workload(j).total_params());
      PreemptionCost& c = price.preemption;
      c.checkpoint_bytes = params * 4.0 * (1.0 + cluster.optimizer_slots);
      c.write = c.checkpoint_bytes / cluster.checkpoint_write_bytes_per_s;
      c.requeue = cluster.requeue_seconds;
      c.restart = cluster.restart_seconds;
      price.launch = cluster.restart_seconds;
      c.resume = c.checkpoint_bytes / cluster.checkpoint_read_bytes_per_s;
      c.suspends = cluster.preempt_by == PreemptBy::kSuspend;
      c.suspend = cluster.suspend_seconds;
    } catch (const InputError& e) {
      throw InputError(fmt::format("job '{}' (trace row {}): {}", j.name, j.row, e.what()));
    }
    table.jobs.push_back(std::move(price));
  }
  return table;
}

JobPrice hand_price(int min_ranks, const std::vector<double>& seconds, double preemption_seconds) {
  JobPrice p;
  p.min_ranks = min_ranks;
  p.max_ranks = min_ranks + static_cast<int>(seconds.size()) - 1;
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    RankPrice r;
    r.ranks = min_ranks + static_cast<int>(i);
    r.seconds = r.step = r.compute = seconds[i];
    r.steps = 1;
    r.exchange = "-";
    p.by_ranks.push_back(r);
  }
  p.preemption.restart = preemption_seconds;
  return p;
}

}  // namespace dtrain::schedule
