#include "perfmodel/pipeline_prediction.h"

#include <fmt/format.h>

#include <algorithm>

#include "comm/bucket_plan.h"
#include "core/error.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/report.h"
#include "perfmodel/straggler.h"
#include "perfmodel/tensor_parallel_cost.h"

namespace dtrain::perf {

namespace {

int stage_of(const std::string& path, const PipelineShape& shape) {
  for (std::size_t s = 0; s < shape.stage_layers.size(); ++s) {
    for (const std::string& name : shape.stage_layers[s]) {
      if (path == name || path.starts_with(name + ".")) return static_cast<int>(s);
    }
  }
  return -1;
}

}  // namespace

PipelinePrediction predict_pipeline(const Workload& w, const Profile& profile, const PipelineShape& shape) {
  const int k = static_cast<int>(shape.stage_layers.size());
  DT_CHECK(k >= 1, "a pipeline of {} stages", k);
  if (shape.micro_batches < 1 || shape.batch % shape.micro_batches != 0) {
    throw InputError(fmt::format("--micro-batches {} does not divide the batch of {}: use a divisor of {}",
                                 shape.micro_batches, shape.batch, shape.batch));
  }
  const std::int64_t rows = shape.batch / shape.micro_batches;
  PipelinePrediction out;
  out.stages.resize(k);
  out.boundary_bytes.assign(std::max(k - 1, 0), 0);
  out.tensor_comm_s.assign(k, 0);
  std::vector<std::vector<LayerSummary>> stage_layers(k);
  for (const LayerSummary& l : w.layers) {
    const int s = stage_of(l.path, shape);
    if (s < 0) throw InputError(fmt::format("layer {} belongs to no pipeline stage", l.path));
    stage_layers[s].push_back(l);
  }
  std::vector<std::int64_t> params(k, 0);
  for (int s = 0; s < k; ++s) {
    // Each stage's layers as one of its T tensor-parallel ranks runs them (tensor_parallel_cost.h).
    for (const TensorParallelLayer& l :
         split_layers(stage_layers[s], shape.tensor_parallel, rows, profile, s > 0, shape.stage_layers[s])) {
      const LayerTime t = layer_time(l.part, rows, profile.device);
      out.stages[s].forward_s += t.forward.seconds + l.forward_comm_s;
      out.stages[s].backward_s += t.backward.seconds + l.backward_comm_s;
      out.tensor_comm_s[s] += l.forward_comm_s + l.backward_comm_s;
      params[s] += l.part.params;
    }
    // Every micro-batch after the first adds its gradients into the step's (layer_cost.h): on
    // the schedule's clock, which gives a stage one backward time, its share of each.
    const double m = shape.micro_batches;
    out.stages[s].backward_s +=
        (m - 1) / m * gradient_accumulation_seconds(static_cast<double>(params[s]), profile.device);
    // The last layer of stage s (forward order) sends its output on, whole (plan.h gathers it).
    if (s + 1 < k && !stage_layers[s].empty())
      out.boundary_bytes[s] = 4.0 * static_cast<double>(stage_layers[s].back().output.numel() * rows);
  }
  const LinkProfile& link = profile.node.intra_link;
  for (double bytes : out.boundary_bytes) out.transfer_s.push_back(link.latency.value + bytes / link.one_way());
  out.clock = perf::simulate_pipeline(shape.schedule, shape.micro_batches, out.stages, out.transfer_s);
  // Each stage's parameters in registration order (the buckets' order), a rank's share of each.
  std::vector<std::vector<std::int64_t>> numels(k);
  std::vector<std::int64_t> whole(k, 0);
  for (const ParameterInfo& q : w.params) {
    if (q.layer == ParameterInfo::kNoLayer) continue;
    const int s = stage_of(w.layers[q.layer].path, shape);
    numels[s].push_back(q.numel);
    whole[s] += q.numel;
  }
  double slowest = 0;
  for (int s = 0; s < k; ++s) {
    out.update_s.push_back(static_cast<double>(params[s]) / profile.device.update.value);
    double sync = 0;
    if (shape.replicas > 1) {
      const double share = whole[s] > 0 ? static_cast<double>(params[s]) / static_cast<double>(whole[s]) : 1.0;
      for (std::int64_t& n : numels[s]) n = static_cast<std::int64_t>(static_cast<double>(n) * share);
      const BucketLayout layout =
          plan_buckets(numels[s], shape.bucket_bytes, adopts_gradients(shape.allreduce, shape.comm_dtype));
      const AllreducePlan plan{shape.allreduce, shape.replicas, false, shape.comm_dtype};
      for (std::size_t b = 0; b < layout.buckets.size(); ++b) {
        const auto elements = layout.bucket_elements[b];
        sync += allreduce_time(plan, static_cast<std::size_t>(elements), profile).seconds;
        if (shape.comm_dtype != DType::kF32) {  // the cast into the wire and the widening back
          sync += static_cast<double>(elements) * 2 * profile.device.wire_pass_seconds(shape.comm_dtype);
        } else if (!layout.adopts_gradient(b)) {
          sync += static_cast<double>(elements) * profile.device.gradient_copy_seconds();
        }
      }
    }
    out.allreduce_s.push_back(sync);
    slowest = std::max(slowest, out.update_s.back() + out.allreduce_s.back());
  }
  // Tensor-parallel ranks meet at every split layer's collective, so a stage's step waits for the
  // slowest of its T ranks, as a data-parallel step waits for its slowest worker (step_model.cpp:
  // synchronization_wait): where the job's ranks outnumber the host's CPUs, the calibrated cost of
  // taking turns on them; elsewhere the straggler wait of T workers (straggler.h).
  if (shape.tensor_parallel > 1) {
    const int ranks = k * shape.tensor_parallel * shape.replicas;
    for (int s = 0; s < k; ++s) {
      const double busy = shape.micro_batches * (out.stages[s].forward_s + out.stages[s].backward_s);
      const double wait = profile.node.time_shared(std::min(profile.node.accelerators, ranks))
                              ? profile.node.turn_taking_fraction(false) * busy
                              : straggler_wait(busy, profile.device.variation(), shape.tensor_parallel);
      out.tensor_sync_s = std::max(out.tensor_sync_s, wait);
    }
  }
  out.step_s = out.clock.step_s + slowest + out.tensor_sync_s;
  return out;
}

std::string describe_pipeline(const PipelinePrediction& p, const PipelineShape& shape) {
  const int k = static_cast<int>(p.stages.size());
  const bool tensor = shape.tensor_parallel > 1;
  std::string out = fmt::format(
      "pipeline of {} stage{}, {} micro-batch{} of {}, {}{}{}:\n", k, k == 1 ? "" : "s", shape.micro_batches,
      shape.micro_batches == 1 ? "" : "es", shape.batch / shape.micro_batches, pipeline::schedule_name(shape.schedule),
      tensor ? fmt::format(", each stage tensor-parallel over {} ranks", shape.tensor_parallel) : "",
      shape.replicas > 1
          ? fmt::format(", {} replicas ({} allreduce)", shape.replicas, comm::algorithm_name(shape.allreduce))
          : "");
  out += fmt::format("  {:<6} {:<24} {:>10} {:>10} {:>10} {:>10} {:>18} {:>6}\n", "stage", "layers", "forward",
                     "backward", tensor ? "tp comm" : "", shape.replicas > 1 ? "sync+upd" : "update", "send", "idle");
  for (int s = 0; s < k; ++s) {
    const auto& names = shape.stage_layers[static_cast<std::size_t>(s)];
    const std::string layers = names.size() == 1 ? names.front() : names.front() + ".." + names.back();
    const std::string send =
        s + 1 < k ? fmt::format("{:.0f} KiB {}", p.boundary_bytes[s] / 1024, format_seconds(p.transfer_s[s])) : "-";
    out +=
        fmt::format("  {:<6} {:<24} {:>10} {:>10} {:>10} {:>10} {:>18} {:>5.0f}%\n", s, layers,
                    format_seconds(p.stages[s].forward_s), format_seconds(p.stages[s].backward_s),
                    tensor ? format_seconds(p.tensor_comm_s[s]) : "", format_seconds(p.update_s[s] + p.allreduce_s[s]),
                    send, 100 * p.clock.idle_s[s] / p.clock.step_s);
  }
  if (tensor) {
    out += fmt::format(
        "  (forward and backward include the tensor-parallel collectives, tp comm, per micro-batch; the step waits "
        "{} for the slowest of the T ranks)\n",
        format_seconds(p.tensor_sync_s));
  }
  out += fmt::format("step {} (schedule {} + slowest {}), bubble {:.0f}% of the stages' time, {:.0f} samples/s\n",
                     format_seconds(p.step_s), format_seconds(p.clock.step_s),
                     shape.replicas > 1 ? "allreduce and update" : "update", 100 * p.clock.bubble_fraction(),
                     static_cast<double>(shape.batch * shape.replicas) / p.step_s);
  return out;
}

}  // namespace dtrain::perf
