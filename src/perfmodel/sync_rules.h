// How fast W workers train under each synchronisation rule of a parameter server when some of
// them are slow: bulk-synchronous (BSP: clock c starts when every worker finished clock c - 1),
// stale-synchronous with bound S (SSP, Ho et al. NIPS 2013: worker i starts clock c when every
// worker finished clock c - S - 1; S = 0 is BSP) and asynchronous (ASP: no wait). Compute only:
// the servers' share is priced by parameter_server.h.
//
// With T_i(c) the compute of worker i's clock c and F_i(c) the moment it ends,
//   F_i(c) = max(F_i(c - 1), max_j F_j(c - S - 1)) + T_i(c),
// and the rate is the gradients done per unit time over the first half of the W x C simulated
// (sync_rules.cpp says why half). Closed forms for a persistent straggler (one
// worker F times slower, the others 1): BSP runs at the slowest worker's pace, W / F gradients per
// unit time; ASP at (W - 1) + 1 / F, so ASP / BSP = F - (F - 1) / W (2 - 1/W for F = 2); SSP
// equals BSP in the long run (the fast workers gain only S clocks). Transient stragglers (each
// worker-step F times slower with probability p) have no closed form: SSP lands between BSP and
// ASP, and this simulation gives it (W = 3, F = 2, p = 1/3: SSP with S = 1 about 1.2x BSP, S = 3
// about 1.27x, ASP about 1.3x).
#pragma once

#include <cstdint>

namespace dtrain::perf {

struct WorkerSpeeds {
  enum class Straggler { kNone, kPersistent, kRandom };
  int workers = 1;
  Straggler straggler = Straggler::kNone;
  double factor = 1.0;     // a slowed step takes factor x the normal step
  int slow_worker = 0;     // kPersistent
  double probability = 0;  // kRandom: each worker-step independently
  double jitter = 0.1;     // every step also takes U(1 - jitter, 1 + jitter) x its time
  std::uint64_t seed = 0;
};

// Unbounded staleness (ASP).
constexpr int kUnboundedStaleness = -1;

// Gradients per unit time (a normal step takes 1) of `speeds` under staleness bound `staleness`
// (0: BSP; kUnboundedStaleness: ASP), simulated over `clocks` clocks per worker (the same
// seeded draws for every rule, so the rules' ratios do not carry sampling noise of their own).
// Throws InputError for fewer than one worker or clock, a factor below 1, or a probability
// outside [0, 1].
double sync_rule_rate(const WorkerSpeeds& speeds, int staleness, int clocks = 4000);

// sync_rule_rate(speeds, staleness) / sync_rule_rate(speeds, 0): the rule's speedup over BSP.
double speedup_over_bsp(const WorkerSpeeds& speeds, int staleness, int clocks = 4000);

// F - (F - 1) / W: ASP over BSP with one worker persistently F times slower and no jitter.
double asp_over_bsp_persistent(int workers, double factor);

}  // namespace dtrain::perf
