// The round trip of one cache line between two cores: one thread on each core takes turns
// writing a shared counter, so each turn moves the line to the other core's cache and back.
// Every transfer between ranks of one host (shared-memory messages, Open MPI's single-copy reads,
// the reductions that follow) moves cache lines the same way, so this latency is the state of the
// machine that same-host communication depends on. On a virtual machine the hypervisor may place
// the two virtual CPUs on cores sharing a cache or on different dies, and move them while the VM
// runs: on the 2-core development VM the round trip switches between about 60 ns and 340 ns
// within seconds, and same-host allreduce times switch with it (up to 5x for 1 MiB). dtrain
// calibrate records it in the profile, dtrain bench train and dtrain train record it with their
// timings, so a prediction can be checked against a run made in the same state.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

namespace dtrain {

// The CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowed_cpus();

// Restricts the calling thread to `cpu`; false where that CPU does not exist or is not allowed.
bool pin_this_thread(int cpu);

// The shortest mean round trip (seconds) over batches of round trips between a thread pinned to
// `cpu_a` and one pinned to `cpu_b`, measured for about `budget` (the minimum over batches
// discards batches in which either thread was preempted). nullopt when a thread cannot be pinned
// there (a CPU that does not exist or that the cpuset forbids), or when the two threads never ran
// at the same time (one core, or both CPUs busy): no batch finished within ten times the budget,
// or the best took over 20 us a round trip (the threads took turns on a core). Never blocks
// longer than ten budgets.
std::optional<double> core_round_trip_seconds(int cpu_a, int cpu_b,
                                              std::chrono::microseconds budget = std::chrono::milliseconds(5));

// Between the first two allowed CPUs; nullopt when the process may run on one CPU only.
std::optional<double> core_round_trip_seconds(std::chrono::microseconds budget = std::chrono::milliseconds(5));

// Two round trips describe different machine states when one is more than `factor` times the
// other (the development VM's two states are 5-6x apart; jitter within a state is under 1.5x).
bool different_core_state(double a_seconds, double b_seconds, double factor = 2.0);

}  // namespace dtrain
