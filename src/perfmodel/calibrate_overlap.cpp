#include "perfmodel/calibrate_overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>

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

  // The comm thread exchanges until both partners' compute is done; the first byte of every
  // message says whether its sender is still computing.
  std::atomic<bool> computing{true};
  std::vector<double> finished;  // completion times of the exchanges
  const double comm_start = now_seconds();
  const std::uint64_t ticket = worker.submit([&](comm::Communicator& c) {
    if (!active) return;
    std::vector<std::byte> send(kExchangeBytes, std::byte{0}), recv(kExchangeBytes, std::byte{0});
    for (;;) {
      const bool mine = computing.load();
      send[0] = std::byte{mine ? std::uint8_t{1} : std::uint8_t{0}};
      exchange_bytes(c, peer, send.data(), recv.data(), kExchangeBytes);
      finished.push_back(now_seconds());
      if (!mine && recv[0] == std::byte{0}) return;
    }
  });
  double work = 0;
  const double compute_start = now_seconds();
  for (std::size_t i = 0; work < target_seconds; i = (i + 1) % bench.layers().size()) {
    bench.run(i);
    work += alone_seconds.at(i);
  }
  const double compute_end = now_seconds();
  computing = false;
  worker.wait(ticket);

  // Exchanges done while this rank computed; the one in flight at the end counts in part.
  double exchanges = 0, last = comm_start;
  for (double t : finished) {
    if (t > compute_end) {
      exchanges += std::min(1.0, (compute_end - last) / std::max(t - last, 1e-9));
      break;
    }
    exchanges += 1;
    last = t;
  }
  const double compute_share = work / (compute_end - compute_start);
  const double comm_share = exchanges * out.exchange_seconds / (compute_end - comm_start);
  const auto mean = mean_over_active(worker, compute_share, comm_share, active);
  out.measured = true;
  out.compute_share = std::clamp(mean[0], 0.01, 1.0);
  out.comm_share = std::clamp(mean[1], 0.01, 1.0);
  int pairs = 0;
  for (std::size_t r = 0; r < partner.size(); ++r) pairs += partner[r] > static_cast<int>(r) ? 1 : 0;
  out.how = fmt::format(
      "{} pair(s) exchanging 1 MiB messages on the communication thread while the compute thread "
      "ran {:.2f} s of the representative layers",
      pairs, target_seconds);
  return out;
}

}  // namespace dtrain::perf
