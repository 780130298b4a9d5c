#include "perfmodel/calibrate_overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "comm/message_buffer.h"
#include "core/timer.h"
#include "perfmodel/calibrate_transport.h"

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

OverlapCalibration calibrate_overlap(CommWorker& worker, LayerBench& bench, const std::vector<double>& alone_seconds,
                                     const std::vector<int>& partner, double target_seconds) {
  OverlapCalibration out;
  if (partner.empty() || bench.layers().empty()) return out;
  const int me = worker.communicator().rank();
  const int peer = partner.at(static_cast<std::size_t>(me));
  const bool active = peer >= 0;
  worker.run([&](comm::Communicator& c) {
    out.exchange_seconds = time_exchanges(c, partner, kExchangeBytes, 0.05);
    c.barrier();
  });

  // One burst at a time (calibrate_overlap.h). The first byte of every message says whether its
  // sender still computes, so both partners know when to stop and their exchanges pair up.
  // finished_at is written before done is set, and read only after done is seen.
  // Each burst sends what the one before received, as time_exchanges does.
  std::array<comm::MessageBuffer, 2> buffers{comm::MessageBuffer(kExchangeBytes), comm::MessageBuffer(kExchangeBytes)};
  std::size_t sent_from = 0;
  std::atomic<bool> computing{true}, done{false};
  double finished_at = 0;
  bool peer_computing = true, self_computing = true;
  const auto burst = [&](comm::Communicator& c) {
    std::byte* send = buffers[sent_from].data();
    std::byte* recv = buffers[1 - sent_from].data();
    sent_from = 1 - sent_from;
    self_computing = computing.load();
    send[0] = std::byte{self_computing ? std::uint8_t{1} : std::uint8_t{0}};
    exchange_bytes(c, peer, send, recv, kExchangeBytes);
    peer_computing = recv[0] != std::byte{0};
    finished_at = now_seconds();
    done = true;
  };
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
      burst_work += out.exchange_seconds;
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
  // Until an exchange in which neither partner computes any more.
  while (active && (peer_computing || self_computing)) worker.run(burst);

  const double compute_share = work / (compute_end - compute_start);
  const double comm_share = burst_time > 0 ? burst_work / burst_time : 1.0;
  const auto mean = mean_over_active(worker, compute_share, comm_share, active);
  out.measured = true;
  out.compute_share = std::clamp(mean[0], 0.01, 1.0);
  out.comm_share = std::clamp(mean[1], 0.01, 1.0);
  int pairs = 0;
  for (std::size_t r = 0; r < partner.size(); ++r) pairs += partner[r] > static_cast<int>(r) ? 1 : 0;
  out.how = fmt::format(
      "{} pair(s) handing one 1 MiB exchange at a time to the communication thread while the compute "
      "thread ran {:.2f} s of the representative layers",
      pairs, target_seconds);
  return out;
}

}  // namespace dtrain::perf
