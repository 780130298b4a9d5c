// Stragglers: in bulk-synchronous training every step waits for the slowest of the p workers.
// If one worker's compute time per step has mean mu and standard deviation sigma = v mu (v the
// profile's device.step_variation, a coefficient of variation), and the p workers' times are
// independent and normal, the step ends on average at
//   E[max_i T_i] = mu + sigma E[M_p],   M_p the largest of p independent standard normals,
// so the step grows by the straggler wait  v mu E[M_p]  (0 for p = 1; E[M_p] grows like
// sqrt(2 ln p)). Persistent differences between devices (one GPU a little slower every step)
// give the same expected wait as fresh draws each step: the job's p devices are p draws.
#pragma once

#include <vector>

namespace dtrain::perf {

// E[M_p], the expected maximum of p independent standard normals: 0 for p = 1, 1/sqrt(pi) for 2,
// 1.5388 for 10, 2.5076 for 100. Computed exactly (to about 1e-9) by integrating
//   E[M_p] = int_0^inf (1 - Phi(x)^p - Phi(-x)^p) dx
// with Simpson's rule, rather than by Blom's approximation Phi^-1((p - 0.375) / (p + 0.25)),
// which is 4% high for p = 2. Throws InputError for p < 1.
double expected_max_of_normals(int p);

// The expected wait per step for the slowest of `workers`: variation x compute x E[M_workers].
double straggler_wait(double compute_seconds, double variation, int workers);

// The same with double buffering: a worker's update waits for the allreduce of the step before
// the last one it computed, so the workers keep one step of slack. With D_i(k) the start of
// worker i's step k, X_i(k) its compute time (normal, mean mu = compute_seconds, standard
// deviation variation x mu, cut at 0) and tail the time from the last backward of a step to the
// end of that step's allreduce,
//   D_i(k+1) = max(D_i(k) + X_i(k), max_j (D_j(k-1) + X_j(k-1)) + tail),
// (bulk-synchronous: D_i(k+1) = max_j (D_j(k) + X_j(k)) + tail, whose period is mu + tail + the
// wait above). A worker waits only when the slowest of the step before is behind it by more than
// a step less the tail, so the slack absorbs most of the variation: at 4 workers and a variation
// of 0.2 the wait is 0.16x the bulk-synchronous one; when the tail exceeds a step, the two steps
// in flight wait half of it each. The wait is the mean period over 4000 simulated steps (fewer
// past 100 workers; a fixed seed: the same answer every call) less the period with every X at
// its mean.
// Only for workers with CPUs of their own: where a host's ranks outnumber its CPUs (node.cores),
// its ranks' steps alternate between a CPU to themselves and half of one (4 ranks of mlp on the
// 2-core VM: 2.3 ms at the 10th percentile, 6.3 ms at the median, lag-1 autocorrelation -0.45),
// far from normal, and the step model charges them the calibrated cost of taking turns
// (profile.h: turn_taking, from expected_slowest below) in place of this wait, slack or not.
double straggler_wait_double_buffered(double compute_seconds, double variation, int workers, double tail_seconds);

// E[max of p independent draws] from the empirical distribution of `seconds` (timings of one
// worker's steps): with the n timings sorted, x_(1) <= ... <= x_(n), the largest of p draws is
// x_(i) with probability (i/n)^p - ((i-1)/n)^p, so
//   E = sum_i x_(i) [(i/n)^p - ((i-1)/n)^p]
// (the mean for p = 1). No normal assumption: it serves ranks whose steps are bimodal. Throws
// InputError for no timings or p < 1.
double expected_slowest(std::vector<double> seconds, int p);

// The coefficient of variation of repeated timings, robustly: the interquartile range over
// 1.349 (the IQR of a normal distribution in standard deviations) over the median, so a few
// preempted calls do not dominate it. Needs at least 4 timings; throws InputError otherwise.
double robust_variation(std::vector<double> seconds);

// The variation of the part of p ranks' step times that is each rank's own, from steps run in
// lockstep (step k starts after a barrier on every rank): with t_rk = c_k + e_rk, where c_k is what
// slowed the whole machine in step k (another tenant, a change of clock) and e_rk what met rank r
// alone, the deviations d_rk = t_rk - mean_r t_rk cancel c_k; for normal e of deviation s,
// E|d| = s sqrt((p-1)/p) sqrt(2/pi). Returns
//   s = mean_rk min(|d_rk|, m) x sqrt(pi/2) x sqrt(p/(p-1)),  over m, the median of all t_rk,
// the mean absolute deviation because a synchronous step waits for the tails too: at p = 2 the
// wait per step, max_r t_rk - mean_r t_rk, is |d_k| exactly, and s x E[M_2] = s / sqrt(pi) gives
// back its mean. The interquartile range this replaced discounted them (ResNet-20 on 2 ranks, 400
// lockstep steps, three runs: it priced a wait of 3.9-7.5% of a step where the steps waited
// 6.3-7.5%). A deviation counts at most one median step: a rank preempted for a second is a
// stall of that moment, not the spread of its steps. per_rank[r][k] is rank r's time of step k.
// Throws InputError for fewer than 2 ranks, ranks with different step counts or fewer than 4 steps.
double lockstep_variation(const std::vector<std::vector<double>>& per_rank);

}  // namespace dtrain::perf
