#include "perfmodel/pipeline_prediction.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/report.h"

namespace dtrain::perf {

namespace {

int stage_of(const std::string& path, const PipelineShape& shape) {
  for (std::size_t s = 0; s < shape.stage_layers.size(); ++s)
    for (const std::string& name : shape.stage_layers[s])
      if (path == name || path.starts_with(name + ".")) return static_cast<int>(s);
  return -1;
}

}  // namespace

PipelinePrediction predict_pipeline(const Workload& w, const Profile& profile, const PipelineShape& shape) {
  const int k = static_cast<int>(shape.stage_layers.size());
  DT_CHECK(k >= 1, "a pipeline of {} stages", k);
  if (shape.micro_batches < 1 || shape.batch % shape.micro_batches != 0)
    throw InputError(fmt::format("--micro-batches {} does not divide the batch of {}: use a divisor of {}",
                                 shape.micro_batches, shape.batch, shape.batch));
  const std::int64_t rows = shape.batch / shape.micro_batches;
  PipelinePrediction out;
  out.stages.resize(k);
  out.boundary_bytes.assign(std::max(k - 1, 0), 0);
  std::vector<std::int64_t> params(k, 0);
  for (const LayerSummary& l : w.layers) {
    const int s = stage_of(l.path, shape);
    if (s < 0) throw InputError(fmt::format("layer {} belongs to no pipeline stage", l.path));
    const LayerTime t = layer_time(l, rows, profile.device);
    out.stages[s].forward_s += t.forward.seconds;
    out.stages[s].backward_s += t.backward.seconds;
    params[s] += l.params;
    // The last layer of stage s (forward order) sends its output on.
    if (s + 1 < k) out.boundary_bytes[s] = 4.0 * static_cast<double>(l.output.numel() * rows);
  }
  const LinkProfile& link = profile.node.intra_link;
  for (double bytes : out.boundary_bytes) out.transfer_s.push_back(link.latency.value + bytes / link.one_way());
  out.clock = perf::simulate_pipeline(shape.schedule, shape.micro_batches, out.stages, out.transfer_s);
  double slowest = 0;
  for (int s = 0; s < k; ++s) {
    out.update_s.push_back(static_cast<double>(params[s]) / profile.device.update.value);
    // The gradients and the loss's verdict (one float more), as parallel/pipeline_updater.h sends them.
    const AllreducePlan plan{shape.allreduce, shape.replicas};
    out.allreduce_s.push_back(
        shape.replicas > 1 ? allreduce_time(plan, static_cast<std::size_t>(params[s]) + 1, profile).seconds : 0.0);
    slowest = std::max(slowest, out.update_s.back() + out.allreduce_s.back());
  }
  out.step_s = out.clock.step_s + slowest;
  return out;
}

std::string describe_pipeline(const PipelinePrediction& p, const PipelineShape& shape) {
  const int k = static_cast<int>(p.stages.size());
  std::string out = fmt::format("pipeline of {} stages, {} micro-batches of {}, {}{}:\n", k, shape.micro_batches,
                                shape.batch / shape.micro_batches, pipeline::schedule_name(shape.schedule),
                                shape.replicas > 1 ? fmt::format(", {} replicas ({} allreduce)", shape.replicas,
                                                                 comm::algorithm_name(shape.allreduce))
                                                   : "");
  out += fmt::format("  {:<6} {:<24} {:>10} {:>10} {:>10} {:>18} {:>6}\n", "stage", "layers", "forward", "backward",
                     shape.replicas > 1 ? "sync+upd" : "update", "send", "idle");
  for (int s = 0; s < k; ++s) {
    const auto& names = shape.stage_layers[static_cast<std::size_t>(s)];
    const std::string layers = names.size() == 1 ? names.front() : names.front() + ".." + names.back();
    const std::string send =
        s + 1 < k ? fmt::format("{:.0f} KiB {}", p.boundary_bytes[s] / 1024, format_seconds(p.transfer_s[s])) : "-";
    out +=
        fmt::format("  {:<6} {:<24} {:>10} {:>10} {:>10} {:>18} {:>5.0f}%\n", s, layers,
                    format_seconds(p.stages[s].forward_s), format_seconds(p.stages[s].backward_s),
                    format_seconds(p.update_s[s] + p.allreduce_s[s]), send, 100 * p.clock.idle_s[s] / p.clock.step_s);
  }
  out += fmt::format("step {} (schedule {} + slowest {}), bubble {:.0f}% of the stages' time, {:.0f} samples/s\n",
                     format_seconds(p.step_s), format_seconds(p.clock.step_s),
                     shape.replicas > 1 ? "allreduce and update" : "update", 100 * p.clock.bubble_fraction(),
                     static_cast<double>(shape.batch * shape.replicas) / p.step_s);
  return out;
}

}  // namespace dtrain::perf
