#include "calibration/calibrate_overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <string>

#include "calibration/calibrate_transport.h"
#include "comm/message_buffer.h"
#include "core/error.h"
#include "core/timer.h"

namespace dtrain::perf {
namespace {

constexpr std::size_t kExchangeBytes = std::size_t{1} << 20;  // the default bucket and chunk

// Means over the ranks that pass active = true, through the worker.
std::array<double, 2> mean_over_active(CommWorker& w, double a, double b, bool active) {
  std::array<float, 3> f{active ? static_cast<float>(a) : 0.0f, active ? static_cast<float>(b) : 0.0f,
                         active ? 1.0f : 0.0f};
  w.run([&f](comm::Communicator& c) { c.allreduce(f.data(), f.size(), DType::kF32, comm::Algorithm::kRing); });
  if (f[2] <= 0) return {1, 1};
  return {static_cast<double>(f[0] / f[2]), static_cast<double>(f[1] / f[2])};
}

}  // namespace

// The compute lost, over the seconds an exchange was in flight beside it: the rest of the time
// the communication thread slept and compute ran as alone.
double compute_share_in_flight(double beside, double alone, double in_flight) {
  if (beside < 0 || alone < 0 || in_flight < 0 || in_flight > beside) {
    throw InputError(
        fmt::format("the compute share needs 0 <= seconds in flight <= seconds beside and times >= 0, "
                    "got beside {}, alone {}, in flight {}",
                    beside, alone, in_flight));
  }
  if (in_flight <= 0) return 1.0;
  return 1 - (beside - alone) / in_flight;
}

namespace {

// One exchange handed to the communication thread: run with whether this rank still computes, it
// returns whether any rank it exchanged with (itself included) still did.
using OverlapExchange = std::function<bool(comm::Communicator&, bool computing)>;

// Seconds the layers take alone, run in order from the first until `target_seconds` of their
// alone_seconds are done: the work shares_beside runs beside the exchanges.
double layers_alone(LayerBench& bench, const std::vector<double>& alone_seconds, double target_seconds) {
  const double start = now_seconds();
  double work = 0;
  for (std::size_t i = 0; work < target_seconds; i = (i + 1) % bench.layers().size()) {
    bench.run(i);
    work += alone_seconds.at(i);
  }
  return now_seconds() - start;
}

// This rank's {compute share, comm share} (calibrate_overlap.h) with `exchange`, `exchange_seconds`
// long alone, handed over one at a time while the compute thread runs target_seconds of the
// layers; afterwards exchanges go on until one in which no rank computed, so every rank makes the
// same ones. An inactive rank (no partner) only computes.
std::array<double, 2> shares_beside(CommWorker& worker, LayerBench& bench, const std::vector<double>& alone_seconds,
                                    double target_seconds, double exchange_seconds, const OverlapExchange& exchange,
                                    bool active) {
  // finished_at is written before done is set, and read only after done is seen.
  std::atomic<bool> computing{true}, done{false};
  double finished_at = 0;
  bool anyone_computing = true;
  const auto burst = [&](comm::Communicator& c) {
    anyone_computing = exchange(c, computing.load());
    finished_at = now_seconds();
    done = true;
  };
  // The same layers alone just before and just after (calibrate_overlap.h: why not alone_seconds).
  const double before = layers_alone(bench, alone_seconds, target_seconds);
  double work = 0, burst_work = 0, burst_time = 0;
  double submitted_at = 0;
  bool in_flight = false;
  std::uint64_t ticket = 0;
  const double compute_start = now_seconds();
  for (std::size_t i = 0; work < target_seconds; i = (i + 1) % bench.layers().size()) {
    if (active && !in_flight) {
      done = false;
      submitted_at = now_seconds();
      ticket = worker.submit(burst);
      in_flight = true;
    }
    bench.run(i);
    work += alone_seconds.at(i);
    if (in_flight && done.load()) {
      worker.wait(ticket);
      burst_work += exchange_seconds;
      burst_time += finished_at - submitted_at;
      in_flight = false;
    }
  }
  const double compute_end = now_seconds();
  computing = false;
  if (in_flight) {  // the burst under way when compute ended, in part: its time so far
    burst_time += compute_end - submitted_at;
    worker.wait(ticket);
  }
  while (active && anyone_computing) worker.run(burst);
  const double alone = 0.5 * (before + layers_alone(bench, alone_seconds, target_seconds));
  const double beside = compute_end - compute_start;
  return {compute_share_in_flight(beside, alone, std::min(burst_time, beside)),
          burst_time > 0 ? burst_work / burst_time : 1.0};
}

OverlapCalibration averaged(CommWorker& worker, const std::array<double, 2>& mine, bool active, std::string how) {
  const auto mean = mean_over_active(worker, mine[0], mine[1], active);
  OverlapCalibration out;
  out.measured = true;
  out.compute_share = std::clamp(mean[0], 0.01, 1.0);
  out.comm_share = std::clamp(mean[1], 0.01, 1.0);
  out.how = std::move(how);
  return out;
}

}  // namespace

OverlapCalibration calibrate_overlap(CommWorker& worker, LayerBench& bench, const std::vector<double>& alone_seconds,
                                     const std::vector<int>& partner, double target_seconds) {
  if (partner.empty() || bench.layers().empty()) return {};
  const int me = worker.communicator().rank();
  const int peer = partner.at(static_cast<std::size_t>(me));
  const bool active = peer >= 0;
  double exchange_seconds = 0;
  worker.run([&](comm::Communicator& c) {
    exchange_seconds = time_exchanges(c, partner, kExchangeBytes, 0.05);
    c.barrier();
  });
  // The first byte of every message says whether its sender still computes, so both partners
  // know when to stop. Each exchange sends what the one before received, as time_exchanges does.
  std::array<comm::MessageBuffer, 2> buffers{comm::MessageBuffer(kExchangeBytes), comm::MessageBuffer(kExchangeBytes)};
  std::size_t sent_from = 0;
  const OverlapExchange exchange = [&](comm::Communicator& c, bool computing) {
    std::byte* send = buffers[sent_from].data();
    std::byte* recv = buffers[1 - sent_from].data();
    sent_from = 1 - sent_from;
    send[0] = std::byte{computing ? std::uint8_t{1} : std::uint8_t{0}};
    exchange_bytes(c, peer, send, recv, kExchangeBytes);
    return computing || recv[0] != std::byte{0};
  };
  const auto mine = shares_beside(worker, bench, alone_seconds, target_seconds, exchange_seconds, exchange, active);
  int pairs = 0;
  for (std::size_t r = 0; r < partner.size(); ++r) pairs += partner[r] > static_cast<int>(r) ? 1 : 0;
  OverlapCalibration out = averaged(worker, mine, active,
                                    fmt::format("{} pair(s) handing one 1 MiB exchange at a time to the communication "
                                                "thread while the compute thread ran {:.2f} s of the representative "
                                                "layers",
                                                pairs, target_seconds));
  out.exchange_seconds = exchange_seconds;
  return out;
}

OverlapCalibration calibrate_mpi_overlap(CommWorker& worker, LayerBench& bench,
                                         const std::vector<double>& alone_seconds, double target_seconds) {
  comm::Communicator& comm = worker.communicator();
  if (comm.size() < 2 || !comm.transport().has_native_allreduce() || bench.layers().empty()) {
    return {};
  }
  // Element 0 carries 1 from a rank that still computes: the sum says whether any does. The rest
  // stay zero (never subnormal).
  comm::MessageBuffer buffer(kExchangeBytes);
  auto* values = reinterpret_cast<float*>(buffer.data());
  std::fill_n(values, kExchangeBytes / sizeof(float), 0.0f);
  const OverlapExchange exchange = [&](comm::Communicator& c, bool computing) {
    values[0] = computing ? 1.0f : 0.0f;
    c.allreduce(values, kExchangeBytes / sizeof(float), DType::kF32, comm::Algorithm::kMpi);
    return values[0] > 0.5f;
  };
  // Alone: the mean of back-to-back calls after a first one, as many as fit 0.05 s by rank 0's
  // first (every rank must make as many).
  double exchange_seconds = 0;
  worker.run([&](comm::Communicator& c) {
    const Stopwatch first;
    exchange(c, false);
    float first_seconds = c.rank() == 0 ? static_cast<float>(first.seconds()) : 0.0f;
    c.allreduce(&first_seconds, 1, DType::kF32, comm::Algorithm::kRing);
    const int calls = std::clamp(static_cast<int>(0.05 / std::max(1e-6f, first_seconds)), 3, 50);
    c.barrier();
    const Stopwatch sw;
    for (int i = 0; i < calls; ++i) exchange(c, false);
    exchange_seconds = sw.seconds() / calls;
  });
  const auto mine = shares_beside(worker, bench, alone_seconds, target_seconds, exchange_seconds, exchange, true);
  OverlapCalibration out =
      averaged(worker, mine, true,
               fmt::format("every rank handing one 1 MiB MPI_Allreduce at a time to the communication thread while "
                           "the compute thread ran {:.2f} s of the representative layers",
                           target_seconds));
  out.exchange_seconds = exchange_seconds;
  return out;
}

}  // namespace dtrain::perf
