#include "perfmodel/scaling_prediction.h"

#include <fmt/format.h>

#include <algorithm>

#include "comm/algorithm.h"
#include "core/error.h"
#include "core/split.h"
#include "perfmodel/report.h"
#include "tensor/dtype.h"

namespace dtrain::perf {
namespace {

std::vector<int> parse_worker_counts(const std::string& s) {
  std::vector<int> out;
  for (const std::string& w : split_list(s, ',')) {
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != w.size() || w.empty()) {
      throw InputError(
          fmt::format("--workers: '{}' is not a whole number; give a comma-separated list such as "
                      "8,64,256",
                      w));
    }
    if (v < 1 || v > (1 << 24)) throw InputError(fmt::format("--workers: {} is not valid; workers must be >= 1", v));
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// --allreduce entries: the collectives of comm/ (ring, tree, butterfly, onetoall, mpi, shm,
// auto) or "ps" for the parameter server.
std::vector<RunConfig> configurations(const ScalingQuery& q, const std::string& exchanges, Sync sync) {
  RunConfig base;
  base.batch_per_worker = q.batch_per_worker;
  base.sync = sync;
  base.servers = q.servers;
  base.comm_dtype = parse_dtype(q.comm_dtype);
  if (q.bucket_mb < 0) throw InputError(fmt::format("--bucket-mb must be >= 0, got {}", q.bucket_mb));
  base.bucket_bytes = static_cast<std::size_t>(q.bucket_mb * (1 << 20));
  base.double_buffering = q.double_buffering;
  base.accumulate = q.accumulate;
  base.hierarchical = q.hierarchical;
  base.sync_batch_norm = q.sync_batch_norm;
  base.population_chunks = q.population_chunks;
  base.staleness = q.staleness;
  if (q.slow_mode.empty() || q.slow_mode == "none") {
    if (q.slow_prob != 0) throw InputError("--slow-prob goes with --slow-mode random");
  } else if (q.slow_mode == "persistent" || q.slow_mode == "random") {
    const bool random = q.slow_mode == "random";
    if (!random && q.slow_prob != 0) throw InputError("--slow-prob goes with --slow-mode random");
    base.slowdown.straggler = random ? WorkerSpeeds::Straggler::kRandom : WorkerSpeeds::Straggler::kPersistent;
    base.slowdown.factor = q.slow_factor;
    base.slowdown.probability = q.slow_prob;
  } else {
    throw InputError(fmt::format("unknown --slow-mode '{}'; valid: none, persistent, random", q.slow_mode));
  }
  std::vector<RunConfig> out;
  for (const std::string& name : split_list(exchanges, ',')) {
    RunConfig c = base;
    if (name == "ps") {
      c.exchange = Exchange::kParameterServer;
    } else {
      try {
        c.algorithm = comm::parse_algorithm(name);
      } catch (const InputError&) {
        throw InputError(
            fmt::format("unknown --allreduce '{}'; valid: ring, tree, butterfly, onetoall, mpi, shm, auto, ps "
                        "(parameter server)",
                        name));
      }
    }
    validate(c);
    out.push_back(c);
  }
  return out;
}

// given: a loaded profile, or null to load q.profile (after the flags are checked, as the
// command always has).
ScalingPrediction predict_with(const ScalingQuery& q, const Profile* given) {
  if (given == nullptr && q.profile.empty()) {
    throw InputError("--profile is required: e.g. --profile p100+ib-fdr (list them with --list-profiles)");
  }
  ScalingPrediction out;
  out.sync = parse_sync(q.sync);
  const std::vector<int> workers = parse_worker_counts(q.workers);
  // ASP and SSP need servers.
  const std::string exchanges = out.sync != Sync::kBsp && !q.allreduce_given ? "ps" : q.allreduce;
  const std::vector<RunConfig> configs = configurations(q, exchanges, out.sync);
  out.dataset = dataset_info(q.dataset);
  out.profile = given != nullptr ? *given : load_profile(q.profile);
  out.profile.device = at_precision(out.profile.device, out.profile.name, q.precision);
  out.workload = describe_zoo_model(q.model, q.dataset);
  if (q.global_batch < 0) throw InputError(fmt::format("--global-batch must be >= 1, got {}", q.global_batch));
  for (int w : workers) {
    const std::int64_t per_worker = q.global_batch > 0 ? q.global_batch / w : q.batch_per_worker;
    if (q.global_batch > 0 && (q.global_batch % w != 0 || per_worker % q.accumulate != 0)) {
      throw InputError(fmt::format(
          "--global-batch {} is not a multiple of {} workers x --accumulate {}: give a global batch every worker "
          "count divides, or fewer worker counts",
          q.global_batch, w, q.accumulate));
    }
    for (RunConfig c : configs) {
      c.workers = w;
      c.batch_per_worker = per_worker;
      out.runs.push_back(predict_run(out.workload, out.dataset, out.profile, c, q.epochs));
      if (w == 1) break;  // one worker trains alone: every exchange predicts the same
    }
  }
  return out;
}

}  // namespace

ScalingPrediction predict_scaling(const ScalingQuery& q) { return predict_with(q, nullptr); }

ScalingPrediction predict_scaling(const ScalingQuery& q, const Profile& profile) { return predict_with(q, &profile); }

nlohmann::json scaling_json(const ScalingQuery& q, const ScalingPrediction& p) {
  nlohmann::json j = runs_to_json(p.runs);
  j["model"] = q.model;
  j["parameters"] = p.workload.total_params();
  j["dataset"] = q.dataset;
  j["profile"] = profile_to_json(p.profile);
  return j;
}

}  // namespace dtrain::perf
