// Stopping a run early without losing anything: the signals a cluster sends before it takes a
// job's processors away. Slurm sends SIGTERM on preemption and at the time limit, then SIGKILL
// GraceTime (KillWait) seconds later; `sbatch --signal=USR1@N` (or USR2) warns N seconds ahead.
// The handler only records the first such signal; the checkpointer (train/checkpointer.h) reads
// it at the next step boundary, every rank agrees, a checkpoint is written and the run ends with
// kStoppedExitCode. Running again with --resume (a requeued Slurm job does it by itself)
// continues exactly where it stopped.
#pragma once

#include <string>

namespace dtrain {

// sysexits.h's EX_TEMPFAIL: "a temporary failure; the user is invited to retry".
inline constexpr int kStoppedExitCode = 75;

// Installs the handler for SIGTERM, SIGUSR1 and SIGUSR2 (system calls restart after it). Idempotent.
void install_stop_signals();
// The first stop signal received since install_stop_signals, 0 when none.
int stop_signal_received();
// "SIGTERM", "SIGUSR1", ...
std::string signal_name(int signal);
// Tests: forget a received signal.
void clear_stop_signal();

}  // namespace dtrain
