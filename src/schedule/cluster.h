// The cluster a queue runs on: nodes of equal size, the hardware profile the model prices their
// ranks with, and what preempting a job costs there (job_pricing.h):
//   checkpoint write  the job's checkpoint (parameters x 4 bytes x (1 + optimizer slots)) at the
//                     write rate;
//   requeue wait      Slurm holds a requeued job PENDING until its credential expires: about 24 s
//                     with AuthInfo=cred_expire=10, measured (shared research notes, Part B2);
//   restart           process start and the first batches loaded;
//   resume            the checkpoint read back at the read rate.
// Or, with preempt = suspend, a stopped job is suspended in place (Slurm's scontrol suspend:
// SIGSTOP to its processes, its CPUs free for other jobs, its memory kept) and resumed on the same
// ranks after `suspend_seconds` (SIGCONT, and Slurm's next scheduling pass); nothing is written
// or lost. A suspended job still holds its host memory (and a GPU job its device memory, which is
// why GPU schedulers checkpoint instead): the simulator does not check that it fits.
// From flags (--nodes, --ranks-per-node, --profile) and optionally a JSON file with the same
// fields (nodes, ranks_per_node, profile, checkpoint_write_bytes_per_s,
// checkpoint_read_bytes_per_s, requeue_seconds, restart_seconds, optimizer_slots, preempt,
// suspend_seconds); flags given on the command line win.
#pragma once

#include <string>

#include "perfmodel/profile.h"

namespace dtrain::schedule {

// How a running job is stopped when a policy takes its ranks.
enum class PreemptBy { kRequeue, kSuspend };

// "requeue" or "suspend"; InputError naming both for anything else.
PreemptBy parse_preempt_by(const std::string& name);

struct Cluster {
  int nodes = 1;
  int ranks_per_node = 0;  // 0: the profile's devices per node
  std::string profile;     // a --profile spec (perfmodel/profile.h: load_profile)
  // 0: the profile's node disk read rate (a profile gives no write rate).
  double checkpoint_write_bytes_per_s = 0;
  double checkpoint_read_bytes_per_s = 0;
  double requeue_seconds = 25;
  double restart_seconds = 2;
  int optimizer_slots = 1;  // state tensors per parameter: 1 for momentum SGD, 2 for Adam
  PreemptBy preempt_by = PreemptBy::kRequeue;
  double suspend_seconds = 1;  // from scontrol resume to the job's next step

  int ranks() const { return nodes * ranks_per_node; }
};

// Fields of a cluster JSON file over `base`. Throws InputError naming the file and the field for
// an unknown field, a wrong type or a value out of range.
Cluster read_cluster_file(const std::string& path, Cluster base);

// Loads the profile and completes `c`: ranks_per_node from the profile when 0, the disk rates
// from its node when 0. Throws InputError when the ranks per node differ from the profile's
// devices per node (the model places a job's ranks on nodes of that size) or a count is < 1.
perf::Profile resolve_cluster(Cluster& c);

}  // namespace dtrain::schedule
