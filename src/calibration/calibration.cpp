#include "calibration/calibration.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "calibration/calibrate_overlap.h"
#include "calibration/calibrate_shared_update.h"
#include "comm/algorithm.h"
#include "comm/hosts.h"
#include "core/core_round_trip.h"
#include "core/error.h"
#include "core/timer.h"
#include "nn/models/models.h"
#include "parallel/core_probe.h"
#include "perfmodel/report.h"
#include "perfmodel/straggler.h"
#include "perfmodel/timing_stats.h"

namespace dtrain::perf {
namespace {

// Measured (bytes, seconds) as the profile's points.
std::vector<std::pair<double, double>> as_points(const std::vector<std::pair<std::size_t, double>>& measured) {
  std::vector<std::pair<double, double>> out;
  out.reserve(measured.size());
  for (const auto& [bytes, seconds] : measured) out.emplace_back(static_cast<double>(bytes), seconds);
  return out;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%MZ", &tm);
  return buf.data();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "CPU";
}

// Means over ranks through the worker: sums of [values..., count].
std::vector<double> sum_over_ranks(CommWorker* w, std::vector<double> v) {
  if (w == nullptr) return v;
  std::vector<float> f(v.begin(), v.end());
  w->run([&f](comm::Communicator& c) { c.allreduce(f.data(), f.size(), DType::kF32, comm::Algorithm::kRing); });
  return {f.begin(), f.end()};
}

// Logical CPUs the ranks of rank 0's host may run on: the union of their CPU affinity masks, so
// that mpirun binding each rank to a core of its own counts those cores, and `taskset -c 0
// mpirun` one CPU. Collective.
int host_cpus(CommWorker* w, const std::vector<int>& host_of) {
  constexpr std::size_t kWords = CPU_SETSIZE / 64;
  std::array<std::uint64_t, kWords> mine{};
  cpu_set_t set;
  CPU_ZERO(&set);
  const bool known = sched_getaffinity(0, sizeof set, &set) == 0;
  const int cpus = known ? CPU_SETSIZE : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int cpu = 0; cpu < cpus; ++cpu) {
    if (!known || CPU_ISSET(cpu, &set)) mine[static_cast<std::size_t>(cpu) / 64] |= std::uint64_t{1} << (cpu % 64);
  }
  std::vector<std::uint64_t> all(mine.begin(), mine.end());
  if (w != nullptr) {
    all.resize(kWords * static_cast<std::size_t>(w->communicator().size()));
    w->run([&](comm::Communicator& c) { c.allgather(mine.data(), all.data(), sizeof mine); });
  }
  std::array<std::uint64_t, kWords> host{};
  for (std::size_t r = 0; r * kWords < all.size(); ++r) {
    if (r < host_of.size() && host_of[r] != host_of.at(0)) continue;
    for (std::size_t i = 0; i < kWords; ++i) host[i] |= all[r * kWords + i];
  }
  int count = 0;
  for (std::uint64_t word : host) count += std::popcount(word);
  return count;
}

void sample_core_round_trip(CommWorker* w, std::vector<double>& out) {
  if (const std::optional<double> rt = core_round_trip_on_rank0(w)) out.push_back(*rt);
}

// Compute steps in lockstep (straggler.h: lockstep_variation), timed in kBlocks blocks spread
// through the calibration: the ranks' own variation changes over seconds on a shared machine (one
// vCPU slow for a second or two), so one block of it is a sample of a moment. ResNet-20 on 2
// ranks, 400 lockstep steps in a row, three runs: blocks of 24 steps (one block and the
// interquartile range, before 2026-11-29 18:00) priced the wait at 1-16% of a step where the 400
// steps waited 6.3-7.5%; four blocks of 12 steps about 6 s apart at 5.3-10.6%.
// Each block is as many steps as fill 5x --min-seconds (at least 0.5 s), 12 to 200 of them;
// rank 0 sets the count from a step timed when the first block starts, which every rank shares.
class LockstepBlocks {
 public:
  static constexpr int kBlocks = 4;

  LockstepBlocks(CommWorker& worker, LayerBench& bench, const CalibrationOptions& o)
      : worker_(worker),
        bench_(bench),
        options_(o),
        per_rank_(static_cast<std::size_t>(worker.communicator().size())) {}

  void time_block() {
    if (steps_ == 0) {
      const double step = time_lockstep_steps(bench_, options_.device, 1).at(0);
      steps_ = static_cast<std::uint64_t>(
          std::clamp(std::ceil(std::max(0.5, 5 * options_.min_seconds) / step), 12.0, 200.0));
      worker_.run([&](comm::Communicator& comm) { comm.broadcast(&steps_, sizeof steps_, 0); });
    }
    const std::vector<double> seconds = time_lockstep_steps(bench_, options_.device, steps_);
    std::vector<double> all(per_rank_.size() * steps_);
    worker_.run([&](comm::Communicator& comm) { comm.allgather(seconds.data(), all.data(), steps_ * sizeof(double)); });
    for (std::size_t r = 0; r < per_rank_.size(); ++r) {
      const auto first = all.begin() + static_cast<std::ptrdiff_t>(r * steps_);
      per_rank_[r].insert(per_rank_[r].end(), first, first + static_cast<std::ptrdiff_t>(steps_));
    }
    ++blocks_;
  }

  // The variation over every block's steps, and how many steps each rank timed; after kBlocks
  // blocks, as the profile's source says.
  std::pair<double, std::size_t> variation() const {
    DT_CHECK(blocks_ == kBlocks, "timed {} lockstep blocks, the profile's source says {}", blocks_, kBlocks);
    return {lockstep_variation(per_rank_), per_rank_.at(0).size()};
  }

 private:
  CommWorker& worker_;
  LayerBench& bench_;
  const CalibrationOptions& options_;
  std::uint64_t steps_ = 0;
  int blocks_ = 0;
  std::vector<std::vector<double>> per_rank_;
};

}  // namespace

void check_calibration_options(const CalibrationOptions& o) {
  const auto& valid = model_names();
  for (const std::string& m : o.device.models) {
    if (std::find(valid.begin(), valid.end(), m) == valid.end()) {
      throw InputError(fmt::format("unknown model '{}' in --models; valid: {}", m, fmt::join(valid, ", ")));
    }
  }
  if (o.min_seconds <= 0) throw InputError(fmt::format("--min-seconds must be > 0, got {}", o.min_seconds));
  if (o.threads < 1) throw InputError(fmt::format("--threads must be at least 1, got {}", o.threads));
  if (o.device.batch < 1) throw InputError(fmt::format("--batch must be at least 1, got {}", o.device.batch));
  if (o.device.rounds < 1 || o.device.rounds > 100) {
    throw InputError(fmt::format("--rounds must be 1 to 100, got {}", o.device.rounds));
  }
}

Calibration calibrate(CommWorker* worker, CalibrationOptions o) {
  Stopwatch sw;
  Calibration c;
  c.date = utc_now();
  c.threads = o.threads;
  c.ranks = worker != nullptr ? worker->communicator().size() : 1;
  sample_core_round_trip(worker, c.core_round_trips);
  if (worker != nullptr) {
    o.device.barrier = [worker] { worker->run([](comm::Communicator& comm) { comm.barrier(); }); };
    const std::size_t largest_message = largest_gradient_bytes(o.device.models);
    worker->run(
        [&](comm::Communicator& comm) { c.transport = calibrate_transport(comm, o.min_seconds, largest_message); });
  } else {
    c.transport.host_of = {0};
    c.transport.host_names = {comm::host_name_of(comm::host_key())};
  }
  c.host = c.transport.host_names.at(0);
  const int rank = worker != nullptr ? worker->communicator().rank() : 0;
  c.host_cores = host_cpus(worker, c.transport.host_of);
  sample_core_round_trip(worker, c.core_round_trips);

  LayerBench bench(o.device);
  // Blocks of steps spread through the calibration. Where every rank has CPUs of its own, steps
  // in lockstep: a block now, after the device benchmarks, after each overlap measurement, and
  // at the end. Where they time-share CPUs, unsynchronised steps for the turns: the device
  // benchmarks' own steps, then a block after them and after each overlap measurement.
  std::optional<LockstepBlocks> lockstep;
  const bool time_shared = worker != nullptr && c.transport.ranks_per_host * c.threads > c.host_cores;
  if (worker != nullptr && !time_shared) lockstep.emplace(*worker, bench, o);
  std::vector<std::vector<double>> free_blocks;
  DeviceCalibration mine;
  const auto timed_block = [&] {
    if (lockstep) lockstep->time_block();
    if (time_shared && !free_blocks.empty()) free_blocks.push_back(time_free_steps(bench, mine.gradient_bytes));
  };
  timed_block();
  mine = calibrate_device(bench, o.device);
  free_blocks.push_back(mine.step_seconds);
  timed_block();
  // Ranks of one host share one copy of the weights under shm (parallel/shared_weights.h).
  const bool one_host = c.ranks > 1 && c.transport.ranks_per_host == c.ranks;
  const double shared_update = one_host ? shared_update_rate(*worker, o.device.models, o.device.batch, 9) : 0.0;
  if (worker != nullptr) {
    std::vector<double> alone;
    for (const ShapeTiming& t : mine.timings) alone.push_back(t.seconds);
    const double overlap_seconds = std::max(0.3, 3 * o.min_seconds);
    c.overlap = calibrate_overlap(*worker, bench, alone, busy_partners(c.transport), overlap_seconds);
    timed_block();
    if (!c.transport.mpi_allreduce.empty())
      c.mpi_overlap = calibrate_mpi_overlap(*worker, bench, alone, overlap_seconds);
    timed_block();
    if (lockstep) std::tie(c.lockstep_variation, c.lockstep_steps) = lockstep->variation();
  }
  // Harmonic means (the mean of times) of the rates; the disk summed over rank 0's host.
  std::vector<double> v{1 / mine.memory_read, 1 / mine.memory_write, 1 / mine.update,
                        one_host ? 1 / shared_update : 0.0};
  for (double r : mine.compute) v.push_back(1 / r);
  const bool on_first_host = c.transport.host_of.at(static_cast<std::size_t>(rank)) == c.transport.host_of[0];
  v.push_back(on_first_host ? mine.disk_read : 0);
  // The step variation: each rank's median step and robust variance (straggler.h).
  const double mid = median(mine.step_seconds);
  const double sigma = mine.step_variation * mid;
  v.insert(v.end(), {mid, mid * mid, sigma * sigma});
  // Per block of unsynchronised steps: the mean step and the slowest of the ranks' (turn_taking).
  const std::size_t blocks_at = v.size();
  for (const std::vector<double>& block : free_blocks) {
    const double mean =
        std::accumulate(block.begin(), block.end(), 0.0) / static_cast<double>(std::max<std::size_t>(1, block.size()));
    v.insert(v.end(), {mean, block.empty() ? mean : expected_slowest(block, c.ranks)});
  }
  const std::size_t casts = v.size();
  v.insert(v.end(), {1 / mine.cast_f16, 1 / mine.cast_bf16, 1 / mine.gradient_copy});
  const bool bf16 = o.device.bf16;  // the same on every rank
  if (bf16)
    for (double rate : mine.bf16) v.push_back(1 / rate);
  const std::vector<double> sum = sum_over_ranks(worker, v);
  const double p = c.ranks;
  c.device = mine;
  c.device.memory_read = p / sum[0];
  c.device.memory_write = p / sum[1];
  c.device.update = p / sum[2];
  c.shared_update = one_host ? p / sum[3] : 0.0;
  for (std::size_t k = 0; k < kComputeKinds.size(); ++k) c.device.compute[k] = p / sum[4 + k];
  c.device.disk_read = sum[4 + kComputeKinds.size()];
  c.device.gradient_copy = p / sum[casts + 2];
  if (bf16)
    for (std::size_t k = 0; k < kComputeKinds.size(); ++k) c.device.bf16[k] = p / sum[casts + 3 + k];
  c.device.cast_f16 = p / sum[casts];
  c.device.cast_bf16 = p / sum[casts + 1];
  const std::size_t at = 5 + kComputeKinds.size();
  const double mean_median = sum[at] / p;
  const double between = p > 1 ? std::max(0.0, (sum[at + 1] - p * mean_median * mean_median) / (p - 1)) : 0.0;
  const double within = sum[at + 2] / p;
  // The schema takes a fraction below 1; a spread that large means the machine was swamped.
  c.free_variation = mean_median > 0 ? std::min(0.99, std::sqrt(within + between) / mean_median) : 0.0;
  c.device.step_variation = c.lockstep_variation >= 0 ? std::min(0.99, c.lockstep_variation) : c.free_variation;
  std::vector<double> block_alone, block_slowest;
  for (std::size_t b = 0; b < free_blocks.size(); ++b) {
    block_alone.push_back(sum[blocks_at + 2 * b] / p);
    block_slowest.push_back(sum[blocks_at + 2 * b + 1] / p);
  }
  set_turns(c, block_alone, block_slowest);
  sample_core_round_trip(worker, c.core_round_trips);
  c.options = o;
  c.options.device.barrier = nullptr;
  c.seconds = sw.seconds();
  return c;
}

Profile calibrated_profile(const Calibration& c) {
  const std::string origin = fmt::format("calibrated on {} at {} by dtrain calibrate", c.host, c.date);
  const int per_host = c.transport.ranks_per_host;
  const std::string layout = fmt::format("{} rank(s) on {} host(s), {} per host, {} compute thread(s) each", c.ranks,
                                         c.transport.host_names.size(), per_host, c.threads);
  auto q = [&](double v, const std::string& how) { return Quantity{v, 0, 0, fmt::format("{}; {}", origin, how)}; };
  const int tensor_parallel = c.options.device.tensor_parallel;
  const std::string models = fmt::format(
      "{}{}", fmt::join(c.options.device.models, ","),
      tensor_parallel > 1 ? fmt::format(" (each layer as one of {} tensor-parallel ranks runs it)", tensor_parallel)
                          : "");
  Profile p;
  p.name = c.options.name.empty() ? "calibrated-" + c.host : c.options.name;
  p.description = fmt::format("dtrain calibrate on {} at {}: {}", c.host, c.date, layout);
  DeviceProfile& d = p.device;
  d.name = fmt::format("{} ({} rank(s) per host x {} thread(s))", cpu_model(), per_host, c.threads);
  // Where each kind's layers were timed (calibrate_in_model.h, calibrate_compute.h).
  const auto timed_where = [&](std::size_t k) {
    return c.device.in_steps[k]
               ? fmt::format(
                     "over {} layer(s) of {} at batch {}, each timed inside the model's own training steps "
                     "(its mean per step in a round, the median of {} rounds)",
                     c.device.shapes[k], models, c.options.device.batch, c.options.device.rounds)
               : fmt::format(
                     "over {} layer shape(s) of {} at batch {}, each built and timed alone, weighted by the "
                     "layers that have it, its median of {} timed pass(es)",
                     c.device.shapes[k], models, c.options.device.batch, c.options.device.rounds);
  };
  for (std::size_t k = 0; k < kComputeKinds.size(); ++k) {
    d.compute[k] = q(c.device.compute[k], fmt::format("roofline rate of {} forward+backward {}; {}", kComputeKinds[k],
                                                      timed_where(k), layout));
  }
  if (c.options.device.bf16) {
    const auto rate = [&](std::string_view kind) {
      return q(c.device.bf16[compute_kind_index(kind)],
               fmt::format("roofline rate of {} forward+backward in bf16 (the matrix layers' inputs and weights bf16, "
                           "sums f32; bf16 activations past the first weighted layer: "
                           "tensor/kernels/cpu/compute_precision.h) {}; {}",
                           kind, timed_where(compute_kind_index(kind)), layout));
    };
    std::vector<std::pair<std::string, Quantity>> memory_bound;
    for (std::string_view kind : kComputeKinds)
      if (kind != "conv2d" && kind != "linear") memory_bound.emplace_back(kind, rate(kind));
    d.precisions.emplace_back(
        "bf16", PrecisionRates{rate("conv2d"), rate("linear"),
                               Quantity{Bf16RunBytes::activation, 0, 0,
                                        "dtrain's bf16 runs keep the outputs of convolutions, batch norms, ReLUs, "
                                        "poolings and additions of bf16 activations in bf16 "
                                        "(tensor/kernels/cpu/conv.cpp, norm.cpp, elementwise.cpp); linear layers "
                                        "write f32"},
                               Quantity{Bf16RunBytes::gradient, 0, 0,
                                        "the gradients of activations are f32 in dtrain's bf16 runs but inside a "
                                        "chain of bf16 nodes (a ResNet block's, from its last batch norm to its "
                                        "first convolution), where they stay bf16"},
                               std::move(memory_bound)});
  }
  d.memory_read =
      q(c.device.memory_read, fmt::format("{} MiB streamed read per rank (the largest activation at batch {}); {}",
                                          c.device.stream_bytes >> 20, c.options.device.batch, layout));
  d.memory_write =
      q(c.device.memory_write, fmt::format("{} MiB streamed write per rank (the largest activation at batch {}); {}",
                                           c.device.stream_bytes >> 20, c.options.device.batch, layout));
  d.update = q(c.device.update, fmt::format("momentum SGD step on the parameters of {}; {}", models, layout));
  if (c.shared_update > 0) {
    d.shared_update = q(c.shared_update,
                        fmt::format("momentum SGD step of ranks sharing one copy of the weights (shm), each its part "
                                    "after a forward and backward, and the barrier after it, on the parameters of "
                                    "{}; {}",
                                    models, layout));
  }
  const std::string steps_how =
      c.lockstep_variation >= 0
          ? fmt::format(
                "{} compute steps per rank (a forward and backward of every layer shape of {} at batch {}) "
                "in {} blocks spread through the calibration, each step after a barrier: the mean absolute "
                "deviation of the ranks' steps from each step's mean (each at most a median step), x "
                "sqrt(pi / 2) x sqrt(p / (p - 1)), over the median step (the ranks' own variation; {:.4f} "
                "from unsynchronised steps, with what slowed every rank alike)",
                c.lockstep_steps, models, c.options.device.batch, LockstepBlocks::kBlocks, c.free_variation)
          : fmt::format(
                "{} compute steps per rank timed one by one (a forward and backward of every layer shape of "
                "{} at batch {}): interquartile range / 1.349 / median, combined with the spread of the {} "
                "rank(s)' medians",
                c.device.step_seconds.size(), models, c.options.device.batch, c.ranks);
  d.step_variation = q(c.device.step_variation, fmt::format("{}; {}", steps_how, layout));
  if (c.device.gradient_copy > 0) {
    d.gradient_copy = q(c.device.gradient_copy,
                        fmt::format("{} KiB (the largest of {}'s gradients) written, then copied into a second buffer "
                                    "after each compute step, median copy; {}",
                                    c.device.gradient_bytes >> 10, models, layout));
  }
  if (c.device.cast_f16 > 0 && c.device.cast_bf16 > 0) {
    const auto how = [&](std::string_view format) {
      return fmt::format(
          "{} KiB of f32 (the gradient copy's bucket) cast to {} and back after each copy, median "
          "round trip; {}",
          c.device.gradient_bytes >> 10, format, layout);
    };
    d.cast_f16 = q(c.device.cast_f16, how("f16"));
    d.cast_bf16 = q(c.device.cast_bf16, how("bf16"));
  }
  if (c.transport.reduce_f16 > 0 && c.transport.reduce_bf16 > 0) {
    d.reduce_f16 = q(c.transport.reduce_f16, fmt::format("comm::reduce_sum of f16, as the f32 reduce; {}", layout));
    d.reduce_bf16 = q(c.transport.reduce_bf16, fmt::format("comm::reduce_sum of bf16, as the f32 reduce; {}", layout));
  }
  d.reduce = q(c.transport.reduce > 0 ? c.transport.reduce : c.device.memory_read / 3,
               c.transport.reduce > 0 ? fmt::format("comm::reduce_sum of 4 MiB f32; {}", layout)
                                      : "one process: no reduction between ranks; a third of the memory read rate");
  NodeProfile& n = p.node;
  n.accelerators = per_host;
  n.disk_read =
      q(c.device.disk_read, fmt::format("64 MiB file read back after posix_fadvise(DONTNEED), summed over the "
                                        "{} rank(s) of one host",
                                        per_host));
  const LinkMeasurement& same = c.transport.same_host;
  if (same.measured) {
    const std::string how = fmt::format("{} over the transport; ", same.how);
    n.intra_link = {"same-host transport",
                    q(same.latency, how + "half the round trip of 64-byte ping-pongs"),
                    q(same.bandwidth, how + fmt::format("slope of simultaneous exchanges between {} and {} KiB",
                                                        same.bytes >> 11, same.bytes >> 10)),
                    q(same.one_way_bandwidth, how + fmt::format("slope of ping-pongs between {} and {} KiB",
                                                                same.bytes >> 11, same.bytes >> 10)),
                    std::nullopt,
                    std::nullopt};
    if (!same.ladder.empty()) {
      ExchangeLadder ladder;
      ladder.points = as_points(same.ladder);
      ladder.one_pair = as_points(same.ladder_one_pair);
      ladder.pairs = ladder.one_pair.empty() ? 1 : same.pairs;
      ladder.source = origin + "; " + how +
                      "one simultaneous exchange of each size above a 64-byte one, the median over paired rounds";
      n.intra_link.exchange_ladder = ladder;
    }
  } else {
    const double copy = 1 / (1 / c.device.memory_read + 1 / c.device.memory_write);
    n.intra_link = {"none (one process)",
                    q(0, "one process: no messages between ranks"),
                    q(copy, "one process: no messages between ranks; a memory copy's rate stands in"),
                    std::nullopt,
                    std::nullopt,
                    std::nullopt};
  }
  if (!c.core_round_trips.empty()) {
    const auto [lo, hi] = std::minmax_element(c.core_round_trips.begin(), c.core_round_trips.end());
    n.core_round_trip = q(median(c.core_round_trips),
                          fmt::format("median of {} samples (min {:.0f} ns, max {:.0f} ns) at the start, middle and "
                                      "end of the calibration, each the fastest of 64-round-trip batches over 5 ms "
                                      "between the first two CPUs of rank 0's host",
                                      c.core_round_trips.size(), *lo * 1e9, *hi * 1e9));
  }
  if (c.host_cores > 0) {
    n.cores =
        q(c.host_cores, "logical CPUs the ranks of rank 0's host may run on (the union of their CPU affinity masks)");
  }
  if (c.overlap.measured) {
    n.overlap = OverlapProfile{q(c.overlap.compute_share, c.overlap.how + "; compute rate kept"),
                               q(c.overlap.comm_share, c.overlap.how + "; exchange rate kept")};
  }
  const LinkMeasurement& net = c.transport.across_hosts;
  if (net.measured) {
    const std::string how = fmt::format("{} over the transport; ", net.how);
    p.network = LinkProfile{
        fmt::format("link between {} and {}", c.transport.host_names.at(0), c.transport.host_names.at(1)),
        q(net.latency, how + "half the round trip of 64-byte ping-pongs"),
        q(net.bandwidth,
          how + fmt::format("slope of simultaneous exchanges between {} and {} KiB", net.bytes >> 11, net.bytes >> 10)),
        q(net.one_way_bandwidth,
          how + fmt::format("slope of ping-pongs between {} and {} KiB", net.bytes >> 11, net.bytes >> 10)),
        std::nullopt,
        q(net.burst, how + net.burst_how)};
  }
  if (!c.transport.mpi_allreduce.empty()) {
    MeasuredAllreduce m;
    m.workers = c.ranks;
    m.points = as_points(c.transport.mpi_allreduce);
    m.source =
        origin + fmt::format(
                     "; MPI_Allreduce of f32 over the {} rank(s), mean per size over 5 to 20 rounds of every size in "
                     "ascending order, each call after a barrier, calls over 3x their size's median left out as "
                     "stalls; {}",
                     c.ranks, layout);
    if (c.mpi_overlap.measured) {
      m.overlap = OverlapProfile{q(c.mpi_overlap.compute_share, c.mpi_overlap.how + "; compute rate kept"),
                                 q(c.mpi_overlap.comm_share, c.mpi_overlap.how + "; MPI_Allreduce rate kept")};
    }
    p.mpi_allreduce = m;
  }
  if (!c.transport.shm_allreduce.empty()) {
    MeasuredAllreduce m;
    m.workers = c.ranks;
    m.points = as_points(c.transport.shm_allreduce);
    m.source = origin + fmt::format(
                            "; dtrain's shm allreduce of f32 over the {} rank(s) on a buffer in their shared memory "
                            "(in place, no staging copy), median per size over 3 to 10 rounds of every size in "
                            "ascending order, each call after a barrier; {}",
                            c.ranks, layout);
    p.shm_allreduce = m;
  }
  if (took_turns(c)) {
    n.turn_taking =
        q(turn_taking(c),
          fmt::format("{} blocks of compute steps per rank timed one by one, spread through the "
                      "calibration: in each, the expected slowest of {} ranks' steps (E[max of {} draws] "
                      "of each rank's steps) against their mean, minus 1; the median of the blocks ({:+.1f}%); "
                      "{} expected against {} in the mean; {}",
                      c.turn_blocks.size(), c.ranks, c.ranks, fmt::join(turn_percentages(c), "%, "),
                      format_seconds(c.steps_slowest), format_seconds(c.steps_alone), layout));
  }
  return p;
}

void set_turns(Calibration& c, const std::vector<double>& alone, const std::vector<double>& slowest) {
  DT_CHECK(!alone.empty() && alone.size() == slowest.size(), "turns: {} block means for {} slowest steps", alone.size(),
           slowest.size());
  c.turn_blocks.clear();
  for (std::size_t b = 0; b < alone.size(); ++b)
    c.turn_blocks.push_back(alone[b] > 0 ? std::max(0.0, slowest[b] / alone[b] - 1) : 0.0);
  c.steps_alone = std::accumulate(alone.begin(), alone.end(), 0.0) / static_cast<double>(alone.size());
  c.steps_slowest = c.steps_alone * (1 + median(c.turn_blocks));
}

double turn_taking(const Calibration& c) {
  if (c.steps_alone <= 0) return 0;
  return std::max(0.0, c.steps_slowest / c.steps_alone - 1);
}

bool took_turns(const Calibration& c) {
  return c.host_cores > 0 && c.transport.ranks_per_host * c.threads > c.host_cores && c.steps_alone > 0;
}

std::vector<double> turn_percentages(const Calibration& c) {
  std::vector<double> out;
  out.reserve(c.turn_blocks.size());
  for (double f : c.turn_blocks) out.push_back(100 * f);
  return out;
}

}  // namespace dtrain::perf
