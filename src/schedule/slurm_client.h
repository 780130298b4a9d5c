// The Slurm commands dtrain's scheduler drives a cluster with (sbatch, squeue, scontrol), run as
// child processes: Slurm's own clients are its stable interface (they read SLURM_CONF like a
// user's shell does), where its C API changes with every release.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dtrain::schedule {

struct CommandResult {
  int status = 0;      // the exit status; 127 when the program could not be started
  std::string output;  // stdout and stderr together
};

// Runs `args` (args[0] looked up in PATH) and waits for it.
CommandResult run_command(const std::vector<std::string>& args);

class SlurmClient {
 public:
  // Throws CommError naming the command and its output when Slurm does not answer (scontrol ping).
  SlurmClient();

  // sbatch --parsable OPTIONS SCRIPT ARGS: the job id.
  std::string submit(const std::vector<std::string>& options, const std::string& script,
                     const std::vector<std::string>& args);
  // State of each listed job still in the queue (PENDING, RUNNING, SUSPENDED, COMPLETING, ...);
  // a job that has left the queue is absent.
  std::map<std::string, std::string> states(const std::vector<std::string>& ids);
  // scontrol requeuehold: the job gets SIGTERM (dtrain checkpoints and stops), then waits held.
  void requeue_hold(const std::string& id);
  // scontrol release: a held job may start again (it resumes from its checkpoint).
  void release(const std::string& id);
  // scontrol suspend: SIGSTOP to the job's processes, its CPUs free for other jobs; scontrol
  // resume: SIGCONT, and it runs on where it stopped.
  void suspend(const std::string& id);
  void resume(const std::string& id);
  void cancel(const std::string& id);
  // The state of a job that has left the queue (COMPLETED, FAILED, CANCELLED, ...), from
  // scontrol (which keeps ended jobs for MinJobAge, 300 s by default); "" when Slurm forgot it.
  std::string final_state(const std::string& id);

 private:
  // Runs a Slurm command; throws CommError with the command line and its output when it fails.
  std::string checked(const std::vector<std::string>& args);
};

}  // namespace dtrain::schedule
