// `dtrain bench cores`: the cache-line round trip between two cores, sampled over time
// (core/core_round_trip.h). A machine whose samples fall into two groups far apart changes state
// while it runs (a VM whose CPUs the hypervisor moves between cores that share a cache and cores
// that do not), and every same-host transfer between ranks changes speed with it.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "apps/dtrain/commands.h"
#include "core/core_round_trip.h"
#include "core/error.h"
#include "core/timer.h"

namespace dtrain::cli {
namespace {

struct BenchCoresOptions {
  double seconds = 10;
  double interval = 0.5;
  std::vector<int> cpus;  // empty: the first two allowed
};

int bench_cores(const BenchCoresOptions& o) {
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> pair = o.cpus;
  if (pair.empty()) {
    if (allowed.size() < 2) {
      throw InputError(
          fmt::format("this process may run on {} CPU only: there is no pair of cores to measure", allowed.size()));
    }
    pair = {allowed[0], allowed[1]};
  }
  if (pair.size() != 2 || pair[0] == pair[1]) {
    throw InputError(fmt::format("--cpus needs two different CPUs, e.g. --cpus {},{}", allowed.front(),
                                 allowed.size() > 1 ? allowed[1] : allowed.front() + 1));
  }
  for (int cpu : pair) {
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
      throw InputError(
          fmt::format("CPU {} is not one this process may run on; allowed: {}", cpu, fmt::join(allowed, ",")));
    }
  }
  if (o.seconds <= 0 || o.interval <= 0) throw InputError("--seconds and --interval must be > 0");
  fmt::print("# cache-line round trip between CPU {} and CPU {}, a sample every {} s for {} s\n", pair[0], pair[1],
             o.interval, o.seconds);
  fmt::print("# {:>8} {:>10}\n", "time_s", "round_ns");
  std::vector<double> samples;
  const Stopwatch clock;
  for (int k = 0; clock.seconds() < o.seconds; ++k) {
    const double due = k * o.interval;
    if (clock.seconds() < due) std::this_thread::sleep_for(std::chrono::duration<double>(due - clock.seconds()));
    const double at = clock.seconds();
    const std::optional<double> rt = core_round_trip_seconds(pair[0], pair[1]);
    if (rt) {
      samples.push_back(*rt);
      fmt::print("  {:>8.2f} {:>10.0f}\n", at, *rt * 1e9);
    } else {
      fmt::print("  {:>8.2f} {:>10}\n", at, "busy");  // the two threads never ran at once
    }
    std::fflush(stdout);
  }
  if (samples.empty()) {
    fmt::print("cores cpu_a={} cpu_b={} samples=0 (both CPUs were busy the whole time)\n", pair[0], pair[1]);
    return 0;
  }
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const double lo = sorted.front(), hi = sorted.back();
  // Samples within 2x of the fastest are the fast state; the rest another one.
  const auto fast =
      std::count_if(samples.begin(), samples.end(), [lo](double s) { return !different_core_state(s, lo); });
  fmt::print("cores cpu_a={} cpu_b={} samples={} min_ns={:.0f} median_ns={:.0f} max_ns={:.0f} fast_fraction={:.2f}\n",
             pair[0], pair[1], samples.size(), lo * 1e9, sorted[sorted.size() / 2] * 1e9, hi * 1e9,
             static_cast<double>(fast) / static_cast<double>(samples.size()));
  if (different_core_state(lo, hi)) {
    fmt::print(
        "# two states {:.1f}x apart: this machine moves its CPUs between cores that share a cache and cores that do "
        "not; same-host communication between ranks changes speed with it\n",
        hi / lo);
  }
  return 0;
}

}  // namespace

Action register_bench_cores(CLI::App& bench) {
  auto o = std::make_shared<BenchCoresOptions>();
  CLI::App* c = bench.add_subcommand(
      "cores", "Cache-line round trip between two cores over time: is this machine's same-host speed stable?");
  c->add_option("--seconds", o->seconds, "How long to sample")->capture_default_str();
  c->add_option("--interval", o->interval, "Seconds between samples (each takes about 5 ms)")->capture_default_str();
  c->add_option("--cpus", o->cpus, "The two CPUs (default: the first two this process may run on)")->delimiter(',');
  return [c, o]() { return c->parsed() ? bench_cores(*o) : -1; };
}

}  // namespace dtrain::cli
