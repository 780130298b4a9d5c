// The report `dtrain calibrate` prints: one line per measured rate, link and ladder, with where
// each was measured (calibration.h: format_calibration).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "calibration/calibration.h"
#include "core/core_round_trip.h"
#include "perfmodel/report.h"
#include "perfmodel/timing_stats.h"

namespace dtrain::perf {
namespace {

std::string gbps(double bytes_per_s) { return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9); }

}  // namespace

std::string format_calibration(const Calibration& c, bool per_shape) {
  std::string s = fmt::format("dtrain calibrate on {} at {}: {} rank(s), {} per host, {} thread(s) each ({:.1f} s)\n",
                              c.host, c.date, c.ranks, c.transport.ranks_per_host, c.threads, c.seconds);
  s += fmt::format("  memory          read {}, write {}\n", gbps(c.device.memory_read), gbps(c.device.memory_write));
  for (std::size_t k = 0; k < kComputeKinds.size(); ++k) {
    s += fmt::format("  {:<15} {:>7.1f} GFLOP/s ({} {})\n", kComputeKinds[k], c.device.compute[k] / 1e9,
                     c.device.shapes[k], c.device.in_steps[k] ? "layers in the model's steps" : "shapes timed alone");
  }
  s += fmt::format("  update          {:.0f} M parameters/s\n", c.device.update / 1e6);
  if (c.shared_update > 0) {
    s += fmt::format("  shared update   {:.0f} M parameters/s (ranks sharing one copy of the weights: shm)\n",
                     c.shared_update / 1e6);
  }
  if (c.device.gradient_copy > 0) {
    s += fmt::format("  gradient copy   {} ({} KiB into its bucket after each compute step)\n",
                     gbps(c.device.gradient_copy), c.device.gradient_bytes >> 10);
  }
  if (!c.device.step_seconds.empty()) {
    if (c.lockstep_variation >= 0) {
      s += fmt::format(
          "  step variation  {:.1f}% (the ranks' own: compute steps of about {} in lockstep; {:.1f}% with what slowed "
          "every rank alike)\n",
          100 * c.device.step_variation, format_seconds(median(c.device.step_seconds)), 100 * c.free_variation);
    } else {
      s += fmt::format(
          "  step variation  {:.1f}% (standard deviation / mean of {} compute steps of about {} per rank)\n",
          100 * c.device.step_variation, c.device.step_seconds.size(), format_seconds(median(c.device.step_seconds)));
    }
  }
  if (took_turns(c)) {
    s += fmt::format(
        "  taking turns    {:+.1f}%: a synchronous step waits for the slowest of {} ranks' compute steps, "
        "{} expected against {} in the mean (the median of {} block(s): {:+.1f}%)\n",
        100 * turn_taking(c), c.ranks, format_seconds(c.steps_slowest), format_seconds(c.steps_alone),
        c.turn_blocks.size(), fmt::join(turn_percentages(c), "%, "));
  }
  s += fmt::format("  disk read       {} per host\n", gbps(c.device.disk_read));
  if (c.device.cast_f16 > 0) {
    s += fmt::format("  16-bit casts    f16 {:.2f} ns, bf16 {:.2f} ns per f32 element, there and back\n",
                     1e9 / c.device.cast_f16, 1e9 / c.device.cast_bf16);
  }
  if (c.transport.reduce > 0) {
    s += fmt::format("  reduce (gamma)  {}", gbps(c.transport.reduce));
    if (c.transport.reduce_f16 > 0) {
      s += fmt::format(" (f16 {}, bf16 {})", gbps(c.transport.reduce_f16), gbps(c.transport.reduce_bf16));
    }
    s += "\n";
  }
  if (c.overlap.measured) {
    s +=
        fmt::format("  overlap         compute keeps {:.0f}% of its rate beside communication, communication {:.0f}%\n",
                    100 * c.overlap.compute_share, 100 * c.overlap.comm_share);
  }
  if (c.mpi_overlap.measured) {
    s +=
        fmt::format("  overlap (MPI)   compute keeps {:.0f}% of its rate beside MPI_Allreduce, MPI_Allreduce {:.0f}%\n",
                    100 * c.mpi_overlap.compute_share, 100 * c.mpi_overlap.comm_share);
  }
  for (const auto* l : {&c.transport.same_host, &c.transport.across_hosts}) {
    if (!l->measured) continue;
    s += fmt::format("  {:<15} alpha {}, bandwidth {} ({} one way) ({})\n",
                     l == &c.transport.same_host ? "same host" : "across hosts", format_seconds(l->latency),
                     gbps(l->bandwidth), gbps(l->one_way_bandwidth), l->how);
    if (l == &c.transport.across_hosts) {
      s += fmt::format("  burst           {:.0f} KiB passed at once after the link idles\n", l->burst / 1024);
    }
    const auto ladder_line = [&s](const char* title, const std::vector<std::pair<std::size_t, double>>& ladder) {
      if (ladder.empty()) return;
      s += title;
      for (const auto& [bytes, seconds] : ladder) {
        s += fmt::format(" {} KiB {} ({})", bytes >> 10, format_seconds(seconds),
                         gbps(static_cast<double>(bytes) / seconds));
      }
      s += "\n";
    };
    ladder_line("  exchange ladder", l->ladder);
    ladder_line("    one pair     ", l->ladder_one_pair);
  }
  const auto allreduce_line = [&s](const char* title, const std::vector<std::pair<std::size_t, double>>& ladder) {
    if (ladder.empty()) return;
    s += title;
    for (const auto& [bytes, seconds] : ladder) s += fmt::format(" {} KiB {}", bytes >> 10, format_seconds(seconds));
    s += "\n";
  };
  allreduce_line("  MPI_Allreduce  ", c.transport.mpi_allreduce);
  allreduce_line("  shm allreduce  ", c.transport.shm_allreduce);
  if (!c.core_round_trips.empty()) {
    const auto [lo, hi] = std::minmax_element(c.core_round_trips.begin(), c.core_round_trips.end());
    s +=
        fmt::format("  core round trip {:.0f} ns (cache line between two cores; {:.0f} to {:.0f} ns over {} samples)\n",
                    median(c.core_round_trips) * 1e9, *lo * 1e9, *hi * 1e9, c.core_round_trips.size());
    if (different_core_state(*lo, *hi)) {
      s += fmt::format(
          "  warning: the core round trip changed {:.1f}x during the calibration: the hypervisor moved this VM's "
          "CPUs between cores that share a cache and cores that do not, and same-host communication speed moves "
          "with it (up to 5x); the profile mixes both states. `dtrain bench cores` watches it over time.\n",
          *hi / *lo);
    }
  }
  if (per_shape) {
    s += "  per shape (rank 0, forward + backward, median):\n";
    for (const ShapeTiming& t : c.device.timings) {
      s += fmt::format("    {:<52} x{:<3} {:>10} {:>7.1f} GFLOP/s  (memory term {})\n", t.shape, t.layers,
                       format_seconds(t.seconds), t.flops / t.seconds / 1e9, format_seconds(t.memory_seconds));
    }
  }
  return s;
}

}  // namespace dtrain::perf
