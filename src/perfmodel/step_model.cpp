#include "perfmodel/step_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "comm/algorithm.h"
#include "comm/bucket_plan.h"
#include "core/error.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/step_simulation.h"
#include "perfmodel/straggler.h"

namespace dtrain::perf {
namespace {

// Consecutive steps simulated to reach the steady state (double buffering settles in two).
constexpr int kSimulatedSteps = 8;

struct ComputePlan {
  std::vector<LayerTime> layers;     // per micro-batch
  double forward = 0, backward = 0;  // per micro-batch, all layers
  double update = 0;
};

ComputePlan plan_compute(const Workload& w, const DeviceProfile& d, std::int64_t micro_batch, std::int64_t params) {
  ComputePlan c;
  for (const LayerSummary& l : w.layers) {
    c.layers.push_back(layer_time(l, micro_batch, d));
    c.forward += c.layers.back().forward.seconds;
    c.backward += c.layers.back().backward.seconds;
  }
  c.update = static_cast<double>(params) / d.update.value;
  return c;
}

double loader_seconds(const Workload& w, const Profile& p, const RunConfig& c) {
  const double sharing = std::min(p.node.accelerators, c.workers);
  const double b = static_cast<double>(c.batch_per_worker);
  return b * c.disk_bytes_per_sample * sharing / p.node.disk_read.value +
         b * w.sample_bytes() / p.device.memory_write.value;
}

std::string name_bottleneck(double compute, double comm, double comm_latency, double data, bool servers) {
  if (data > compute && data > comm) return "data loading";
  if (comm > compute) {
    if (servers) return "parameter servers";
    return comm_latency > comm / 2 ? "communication (latency)" : "communication (bandwidth)";
  }
  return "compute";
}

void add_compute_events(const Workload& w, const ComputePlan& c, int accumulate, double t0, StepPrediction& s) {
  double t = t0;
  for (int m = 0; m < accumulate; ++m) {
    for (std::size_t i = 0; i < w.layers.size(); ++i) {
      s.timeline.push_back({w.layers[i].path, "forward", "compute", t, c.layers[i].forward.seconds});
      t += c.layers[i].forward.seconds;
    }
    for (std::size_t i = w.layers.size(); i-- > 0;) {
      s.timeline.push_back({w.layers[i].path, "backward", "compute", t, c.layers[i].backward.seconds});
      t += c.layers[i].backward.seconds;
    }
  }
}

// Whether the workers' host has fewer CPUs than ranks: its ranks then take turns on them, and the
// calibrated step variation is that sharing, which no worker waits for (see predict_step).
bool ranks_take_turns(const Profile& p, int workers) {
  return p.node.time_shared(std::min(p.node.accelerators, workers));
}

// What synchronising the workers adds to a step of `compute` seconds. Where they take turns on
// shared CPUs, a rank that waits gives its CPU to the rank it shares it with, whose compute the
// calibrated rates already count: no straggler wait, but the measured cost of the turns
// (profile.h: turn_taking). Elsewhere, the wait for the slowest worker (straggler.h), with the
// slack of double buffering when `tail` (the last bucket's end past backward) is given.
double synchronization_wait(const Profile& p, int workers, double compute, std::optional<double> tail,
                            bool shm = false) {
  if (ranks_take_turns(p, workers)) return p.node.turn_taking_fraction(shm) * compute;
  if (tail) return straggler_wait_double_buffered(compute, p.device.variation(), workers, *tail);
  return straggler_wait(compute, p.device.variation(), workers);
}

// The time per step that workers slowed on purpose add under the run's rule (sync_rules.h): W
// gradients take W / rate steps of compute instead of one each; allreduce and BSP wait for the
// slowest every step, SSP within its bound, ASP never. 0 when no worker is slowed.
double slowdown_wait(const RunConfig& c, double compute) {
  if (c.slowdown.straggler == WorkerSpeeds::Straggler::kNone || c.slowdown.factor <= 1.0) return 0;
  WorkerSpeeds s = c.slowdown;
  s.workers = c.workers;
  s.jitter = 0;
  s.slow_worker = 0;  // which worker is slow does not change the rate
  const int staleness = c.exchange == Exchange::kAllreduce || c.sync == Sync::kBsp ? 0
                        : c.sync == Sync::kSsp                                     ? c.staleness
                                                                                   : kUnboundedStaleness;
  // About 4 million worker-steps at most: enough clocks for the rate, bounded for large runs.
  const int clocks = std::clamp(4'000'000 / std::max(1, c.workers), 50, 2000);
  return compute * (c.workers / sync_rule_rate(s, staleness, clocks) - 1.0);
}

StepPrediction predict_parameter_server(const Workload& w, const Profile& p, const RunConfig& c,
                                        const ComputePlan& plan, double data) {
  StepPrediction s;
  const double k = c.accumulate;
  // The calibrated compute, as the workers of this run share the hosts' CPUs (parameter_server.h).
  const WorkerCompute cpu = worker_compute_on_cores(p, c.workers, c.sync, k * (plan.forward + plan.backward));
  const double scale = cpu.shared / (k * (plan.forward + plan.backward));
  const double fwd = scale * k * plan.forward, bwd = scale * k * plan.backward;
  // Slowed workers stretch the workers' period before the servers' bound applies (ASP, SSP). A
  // slowed worker sleeps, freeing its CPU: the rule's pace on CPUs of their own, where it is
  // slower than the pace of the shared CPUs.
  ServerPlan plan_ps{c.workers, c.servers, c.sync, c.comm_dtype};
  // Shards are pushed as backward finishes them (ps/ps_updater.h); on CPUs the servers' side of a
  // push is a copy that needs a CPU the workers leave free (a NIC or DMA engine needs none).
  const bool cpu_free = !p.node.cores || std::min(p.node.accelerators, c.workers) < p.node.cores->value;
  if (c.accumulate == 1 && cpu_free) {
    std::vector<std::int64_t> layer_params;
    std::vector<double> layer_backward;
    for (std::size_t i = 0; i < w.layers.size(); ++i) {
      layer_params.push_back(w.layers[i].params);
      layer_backward.push_back(scale * plan.layers[i].backward.seconds);
    }
    const ServerTime serial = parameter_server_time(plan_ps, w.total_params(), 0, p);
    plan_ps.push_hidden = pushes_during_backward(layer_params, layer_backward, c.servers, serial.push);
    // Each shard's weights are asked for with its push (ps/ps_worker.h); under BSP its answer
    // waits for the server's arithmetic, under SSP and ASP the step does not.
    plan_ps.pull_hidden = pulls_during_backward(layer_params, layer_backward, c.servers, serial.push,
                                                c.sync == Sync::kBsp ? serial.server_update : 0.0, serial.pull);
  }
  const double slowed_compute = std::max(0.0, cpu.alone + slowdown_wait(c, cpu.alone) - cpu.shared);
  const ServerTime t = parameter_server_time(plan_ps, w.total_params(), fwd + bwd + slowed_compute, p);
  // What the slowdown adds to the step: nothing where the servers bound it anyway (ASP, SSP).
  const double slowed =
      slowed_compute > 0 ? t.step - parameter_server_time(plan_ps, w.total_params(), fwd + bwd, p).step : 0;
  s.compute = fwd + bwd;
  s.comm = t.push + t.pull + t.server_update;
  s.comm_allreduce = t.push + t.pull;
  // BSP: the servers wait for every push, so the step waits for the slowest worker's (where the
  // workers take turns on shared CPUs, `shared` already is the slowest's).
  const double natural =
      c.sync == Sync::kBsp && !cpu.turns() ? synchronization_wait(p, c.workers, s.compute, std::nullopt) : 0;
  s.straggler = natural + slowed;
  s.turns = cpu.as_calibrated ? ranks_take_turns(p, c.workers) : cpu.turns();
  const double period = t.step + natural;
  const double exposed_data = std::max(0.0, data - period);
  s.step = period + exposed_data;
  s.data = data;
  // The workers' wait: the step less their own compute (t.step holds the slowdown's share).
  s.phases = {exposed_data, fwd, bwd, t.step - s.compute + natural, 0};
  ComputePlan shared_plan = plan;
  for (LayerTime& l : shared_plan.layers) {
    l.forward.seconds *= scale;
    l.backward.seconds *= scale;
  }
  add_compute_events(w, shared_plan, c.accumulate, exposed_data, s);
  double at = exposed_data + fwd + bwd;
  if (s.straggler > 0) {
    s.timeline.push_back({s.wait_name(), "straggler", "compute", at, s.straggler});
    at += s.straggler;
  }
  // The push starts during backward by the part of it that overlaps (pushes_during_backward).
  const double pushed = at - plan_ps.push_hidden + t.push;
  s.timeline.push_back({"push gradients", "push", "comm", at - plan_ps.push_hidden, t.push});
  s.timeline.push_back({"server update", "server", "servers", pushed, t.server_update});
  s.timeline.push_back({"pull parameters", "pull", "comm", pushed + t.server_update - plan_ps.pull_hidden, t.pull});
  s.bottleneck = t.servers_bound ? "parameter servers"
                                 : name_bottleneck(s.compute, t.exposed, 0, data, t.server_update > t.push + t.pull);
  return s;
}

}  // namespace

void validate(const RunConfig& c) {
  if (c.workers < 1) throw InputError(fmt::format("workers must be >= 1, got {}", c.workers));
  if (c.batch_per_worker < 1)
    throw InputError(fmt::format("--batch-per-worker must be >= 1, got {}", c.batch_per_worker));
  if (c.accumulate < 1) throw InputError(fmt::format("--accumulate must be >= 1, got {}", c.accumulate));
  if (c.batch_per_worker % c.accumulate != 0) {
    throw InputError(
        fmt::format("--accumulate {} must divide the per-worker batch {} evenly", c.accumulate, c.batch_per_worker));
  }
  if (c.comm_dtype != DType::kF32 && c.comm_dtype != DType::kF16 && c.comm_dtype != DType::kBF16) {
    throw InputError("--comm-dtype must be f32, f16 or bf16");
  }
  if (c.servers < 1) throw InputError(fmt::format("--servers must be >= 1, got {}", c.servers));
  if (c.staleness < 0) throw InputError(fmt::format("--staleness must be >= 0, got {}", c.staleness));
  if (c.slowdown.straggler != WorkerSpeeds::Straggler::kNone) {
    if (!(c.slowdown.factor >= 1.0)) {
      throw InputError(fmt::format("--slow-factor {} is below 1: a slowed step takes factor x its compute, e.g. 2",
                                   c.slowdown.factor));
    }
    if (c.slowdown.straggler == WorkerSpeeds::Straggler::kRandom &&
        !(c.slowdown.probability > 0 && c.slowdown.probability <= 1)) {
      throw InputError(fmt::format("--slow-prob {} is not in (0, 1]", c.slowdown.probability));
    }
  }
  if (c.exchange == Exchange::kAllreduce && c.sync != Sync::kBsp) {
    throw InputError(fmt::format("--sync {} applies to the parameter server only; use --allreduce ps, or --sync bsp",
                                 sync_name(c.sync)));
  }
  if (c.exchange == Exchange::kParameterServer && c.double_buffering) {
    throw InputError("--double-buffering applies to allreduce, not to the parameter server");
  }
  if (c.population_chunks < -1) throw InputError("population chunks must be >= -1 (-1: the whole training set)");
  if (c.exchange == Exchange::kParameterServer && c.sync_batch_norm) {
    throw InputError("--sync-bn sums statistics over data-parallel ranks, not through parameter servers");
  }
  if (c.disk_bytes_per_sample < 0) throw InputError("disk bytes per sample must be >= 0");
}

std::size_t chunk_bytes_of(const RunConfig& c, const Profile& p) {
  if (c.chunk_bytes > 0) return c.chunk_bytes;
  return comm::chunk_bytes_for(c.workers > std::max(1, p.node.accelerators));
}

std::string exchange_label(const RunConfig& c) {
  if (c.exchange == Exchange::kParameterServer) return fmt::format("ps-{} x{}", sync_name(c.sync), c.servers);
  return fmt::format("{}{}", c.hierarchical ? "hier-" : "", comm::algorithm_name(c.algorithm));
}

StepPrediction predict_step(const std::vector<LayerSummary>& layers, const Profile& profile, const RunConfig& config) {
  return predict_step(workload_from_layers(layers), profile, config);
}

StepPrediction predict_step(const Workload& w, const Profile& p, const RunConfig& config) {
  validate(config);
  RunConfig c = config;
  if (c.exchange == Exchange::kAllreduce && c.algorithm == comm::Algorithm::kAuto && !c.hierarchical &&
      shm_candidate(p, c.workers)) {
    c.algorithm = comm::Algorithm::kShm;  // as the trainer resolves `auto` (allreduce_time.h)
  }
  const DeviceProfile& d = p.device;
  const ComputePlan plan = plan_compute(w, d, c.batch_per_worker / c.accumulate, w.total_params());
  const double data = loader_seconds(w, p, c);
  if (c.exchange == Exchange::kParameterServer) return predict_parameter_server(w, p, c, plan, data);

  StepPrediction s;
  const bool distributed = c.workers > 1;
  const AllreducePlan ar{c.algorithm, c.workers, c.hierarchical, c.comm_dtype, chunk_bytes_of(c, p)};
  const double k = c.accumulate;
  // Ranks that share one copy of the weights (shm without double buffering) each update their part
  // of them and meet at a barrier (parallel/shared_weights.h): at the rate calibrated that very way
  // where the profile has it (device.shared_update: the part's cache lines come back from the cores
  // that read them in forward), else 1/p of them at the rate of every rank updating at once.
  const bool shared_weights = distributed && c.algorithm == comm::Algorithm::kShm && !c.double_buffering;
  const double update = !shared_weights   ? plan.update
                        : d.shared_update ? static_cast<double>(w.total_params()) / d.shared_update->value
                                          : plan.update / c.workers;
  const std::size_t layers = w.layers.size();
  // The compute thread's items: forward and backward of each micro-batch, layer by layer. In the
  // last backward each parameter's grad-ready hook copies its gradient into its bucket as soon as
  // its layer's backward ends (a bucket of one parameter adopts the gradient instead, no copy,
  // with f32 on the wire except with shm; a linear layer's weight gradient is written into its
  // slot by backward, no copy either; with f16 or bf16 on the wire every gradient is cast into its
  // wire slot instead: parallel/buckets.h); a bucket is released when its last gradient is in and
  // every bucket before it was released.
  SimInput sim;
  sim.double_buffering = c.double_buffering;
  sim.steps = kSimulatedSteps;
  std::vector<std::string> item_name;
  std::vector<bool> item_backward;
  for (int m = 0; m < c.accumulate; ++m) {
    for (std::size_t i = 0; i < layers; ++i) {
      sim.items.push_back({plan.layers[i].forward.seconds, {}});
      item_name.push_back(w.layers[i].path);
      item_backward.push_back(false);
    }
    if (m == c.accumulate - 1) sim.forward_items = sim.items.size();
    for (std::size_t i = layers; i-- > 0;) {
      // A later micro-batch adds its gradients into the earlier ones' (layer_cost.h).
      const double accumulation =
          m > 0 ? gradient_accumulation_seconds(static_cast<double>(w.layers[i].params), d) : 0.0;
      sim.items.push_back({plan.layers[i].backward.seconds + accumulation, {}});
      item_name.push_back(w.layers[i].path);
      item_backward.push_back(true);
    }
  }
  // Synchronized batch norm (autograd/ops/sync_norm.cpp): forward and backward of each batch-norm
  // layer wait for a sum of 2C + 1 doubles over the workers, an allgather in rank order
  // (comm/exact_sum.h) through the transport. Priced as half a ring allreduce of those bytes:
  // (p - 1) latency-bound steps where the allreduce takes 2 (p - 1).
  if (distributed && c.sync_batch_norm) {
    const AllreducePlan small{comm::Algorithm::kRing, c.workers, false, DType::kF32, chunk_bytes_of(c, p)};
    for (std::size_t i = 0; i < layers; ++i) {
      if (w.layers[i].kind != "batch_norm") continue;
      const std::int64_t channels = w.layers[i].output[0];
      const double sum = allreduce_time(small, static_cast<std::size_t>(2 * (2 * channels + 1)), p).seconds / 2;
      for (int m = 0; m < c.accumulate; ++m) {
        const std::size_t base = static_cast<std::size_t>(m) * 2 * layers;
        sim.items[base + i].seconds += sum;
        sim.items[base + 2 * layers - 1 - i].seconds += sum;
        s.sync_batch_norm += 2 * sum;
      }
    }
  }
  std::vector<std::vector<std::size_t>> owned(layers);
  std::vector<std::size_t> orphans;
  for (std::size_t i = 0; i < w.params.size(); ++i) {
    (w.params[i].layer < layers ? owned[w.params[i].layer] : orphans).push_back(i);
  }
  std::vector<std::int64_t> numels;
  for (const ParameterInfo& q : w.params) numels.push_back(q.numel);
  // With shm and f32 on the wire a bucket's buffer must lie in shared memory, and with f16 or bf16
  // every gradient is cast into its wire slot, so one-parameter buckets copy (cast) their gradient
  // too (comm/bucket_plan.h: adopts_gradients).
  const BucketLayout layout = plan_buckets(numels, c.bucket_bytes, adopts_gradients(c.algorithm, c.comm_dtype));
  // Item of the last backward that makes each parameter's gradient final.
  std::vector<std::size_t> final_item(w.params.size(), sim.items.empty() ? 0 : sim.items.size() - 1);
  double copies = 0;
  const bool half = c.comm_dtype != DType::kF32;
  // s per element: the scaled copy, or the scaled cast into a 16-bit wire.
  const double copy_rate = half ? d.wire_pass_seconds(c.comm_dtype) : d.gradient_copy_seconds();
  // Written in place only by the one backward of a step: with accumulation the first micro-batch's
  // gradient is in the slot, and the sum of the later ones is a new tensor, copied in. With a 16-bit
  // wire a gradient is cast into it all the same, unless the layer writes it scaled in the wire type
  // itself: linear and convolution weights in a bf16 run with a bf16 wire (parallel/buckets.h).
  const bool writes_wire = c.comm_dtype == DType::kBF16 && d.precision == "bf16";
  const auto in_place = [&](std::size_t q) {
    if (c.accumulate != 1) return false;
    return half ? writes_wire && w.params[q].written_in_wire : w.params[q].written_in_place;
  };
  // Gradients scaled on the communication thread (adopted or written in place), per bucket.
  std::vector<std::int64_t> scaled_later(layout.buckets.size(), 0);
  for (std::size_t q = 0; q < w.params.size(); ++q) {
    const std::size_t b = layout.bucket_of[q];
    if (layout.adopts_gradient(b) || in_place(q)) scaled_later[b] += w.params[q].numel;
  }
  for (std::size_t i = 0; i < layers; ++i) {
    const std::size_t it = sim.items.size() - 1 - i;  // layer i's backward in the last micro-batch
    for (std::size_t q : owned[i]) {
      if (distributed && !layout.adopts_gradient(layout.bucket_of[q]) && !in_place(q)) {
        const double copy = static_cast<double>(w.params[q].numel) * copy_rate;
        sim.items[it].seconds += copy;
        copies += copy;
      }
      final_item[q] = it;
    }
  }

  if (distributed) {
    // The communication thread's passes over a bucket, bytes per element: with f32 on the wire,
    // the finite check (read f32) and an adopted gradient's scaling (write f32, reading what the
    // check reads), and so of a gradient written in place. These passes run as the copy does (a
    // buffer a step old), so with a calibrated gradient copy each byte they read or write costs
    // half a copied byte. With f16 or bf16, the widening of the sums fused with the check (read
    // 2, write 4), half of the two casts' calibrated time where the profile has it (a conversion
    // without vector instructions is far slower than its bytes).
    const auto local_rate = [&](bool scaled) {
      if (half) return d.wire_pass_seconds(c.comm_dtype);
      const double reads = 4.0;
      const double writes = scaled ? 4.0 : 0.0;
      return d.gradient_copy ? (reads + writes) / (2 * d.gradient_copy->value)
                             : reads / d.memory_read.value + writes / d.memory_write.value;
    };
    // With f32 buckets in shared memory (shm) the allreduce scales and checks the sums as it makes
    // them, and the calibrated shm ladder times it doing so: no pass of its own.
    const bool scaled_in_allreduce = c.algorithm == comm::Algorithm::kShm && !half;
    std::map<std::int64_t, AllreduceTime> memo;  // buckets of equal size cost the same
    std::size_t released_by = 0;
    for (std::size_t b = 0; b < layout.buckets.size(); ++b) {
      BucketTiming bt;
      bt.elements = layout.bucket_elements[b];
      std::size_t last = 0;
      for (std::size_t q : layout.buckets[b]) last = std::max(last, final_item[q]);
      released_by = std::max(released_by, last);  // in order: after every bucket before it
      if (!sim.items.empty()) sim.items[released_by].releases.push_back(b);
      auto it = memo.find(bt.elements);
      if (it == memo.end()) {
        it = memo.emplace(bt.elements, allreduce_time(ar, static_cast<std::size_t>(bt.elements), p)).first;
      }
      bt.allreduce = it->second.seconds;
      s.comm_allreduce += bt.allreduce;
      s.comm_latency += it->second.latency;
      const auto scaled = static_cast<double>(scaled_later[b]);
      const double passes = scaled_in_allreduce ? 0.0
                                                : (static_cast<double>(bt.elements) - scaled) * local_rate(false) +
                                                      scaled * local_rate(true);
      sim.bucket_seconds.push_back(bt.allreduce + passes);
      sim.bucket_burstable.push_back(it->second.network_transfer);
      s.buckets.push_back(bt);
    }
  }
  sim.update = update;
  // The network's burst allowance, in seconds of its link time; on one node no bucket has a
  // network transfer to spend it on (allreduce_time.h).
  if (distributed && p.network) sim.burst = p.network->burst_bytes() / p.network->bandwidth.value;
  // A measured allreduce with its own overlap (a library's polling collective) replaces the node's.
  const MeasuredAllreduce* measured = distributed ? measured_allreduce_for(ar, p) : nullptr;
  const std::optional<OverlapProfile>& overlap =
      measured != nullptr && measured->overlap ? measured->overlap : p.node.overlap;
  if (distributed && overlap) {
    // Work conservation: where the two threads share cores, the CPU time compute gives up beside
    // communication is time the communication thread runs, and in a step that thread sleeps
    // between buckets, so its time on a core moves bytes. Communication then keeps at least
    // 1 - compute_share of its rate. The calibrated share (back-to-back exchanges beside compute,
    // calibrate_overlap.h) can fall far below that: each exchange there waits for the partner
    // rank's thread to be scheduled, and a thread that polls and yields gets a core rarely
    // (1% on the 2-core VM while compute keeps 76%); predicted with it, LeNet's double-buffered
    // steps took 80 ms where 57 were measured.
    sim.compute_share = overlap->compute.value;
    sim.comm_share = std::max(overlap->comm.value, 1.0 - sim.compute_share);
  }
  const SimStep r = simulate_steps(sim);

  const double fwd = k * plan.forward;
  const double bwd = k * plan.backward + copies;
  s.compute = fwd + bwd + update + s.sync_batch_norm;
  s.comm = 0;
  for (double x : sim.bucket_seconds) s.comm += x;
  s.data = data;
  // Every worker's update waits for the slowest worker's last bucket: the wait goes before the
  // update (the loader runs on its own thread, so a slower period hides more of it). With double
  // buffering that bucket is the step before's, and the slack hides most of the wait
  // (straggler.h). Where the host's ranks time-share its CPUs they take turns instead.
  std::optional<double> tail;
  if (c.double_buffering) {
    tail = 0.0;
    for (double e : r.bucket_end) tail = std::max(*tail, e - r.backward_end);
  }
  const double natural = synchronization_wait(p, c.workers, s.compute, tail, c.algorithm == comm::Algorithm::kShm);
  s.turns = ranks_take_turns(p, c.workers);
  // A worker slowed on purpose sleeps. Where the ranks take turns on shared CPUs its sleep frees a
  // CPU for the others (parameter_server.h: worker_compute_on_cores), so the step's compute is the
  // larger of the turns' (calibrated) and the slowed worker's chain on a CPU of its own.
  const double alone = worker_compute_on_cores(p, c.workers, Sync::kBsp, s.compute).alone;
  s.straggler = natural + (s.turns ? std::max(0.0, alone + slowdown_wait(c, alone) - s.compute - natural)
                                   : slowdown_wait(c, s.compute));
  const double period = r.period + s.straggler;
  const double exposed_data = std::max(0.0, data - period);
  s.step = period + exposed_data;
  // As the updater times them: wall time of the forward passes, of the backward passes, of the
  // wait for the buckets (and for the slowest worker), of the update.
  double forward_wall = 0, backward_wall = 0;
  for (std::size_t i = 0; i < sim.items.size(); ++i) {
    (item_backward[i] ? backward_wall : forward_wall) += r.item_end[i] - r.item_start[i];
  }
  s.phases = {exposed_data, forward_wall, backward_wall, r.update_start - r.backward_end + s.straggler,
              r.update_end - r.update_start};
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    s.buckets[b].ready = r.bucket_ready[b];
    s.buckets[b].start = r.bucket_start[b];
    s.buckets[b].end = r.bucket_end[b];
  }

  for (std::size_t i = 0; i < sim.items.size(); ++i) {
    s.timeline.push_back({item_name[i], item_backward[i] ? "backward" : "forward", "compute",
                          exposed_data + r.item_start[i], r.item_end[i] - r.item_start[i]});
  }
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    s.timeline.push_back({fmt::format("bucket {}", b), "allreduce", "comm", exposed_data + s.buckets[b].start,
                          s.buckets[b].end - s.buckets[b].start});
  }
  if (s.straggler > 0) {
    s.timeline.push_back({s.wait_name(), "straggler", "compute", exposed_data + r.update_start, s.straggler});
  }
  s.timeline.push_back(
      {"update", "update", "compute", exposed_data + r.update_start + s.straggler, r.update_end - r.update_start});
  s.timeline.push_back({"load batch", "data", "loader", 0, data});
  s.bottleneck = name_bottleneck(s.compute, s.comm, s.comm_latency, data, false);
  return s;
}

}  // namespace dtrain::perf
