#include "schedule/slurm_client.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <sstream>

#include "core/error.h"

extern char** environ;

namespace dtrain::schedule {

CommandResult run_command(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw CommError(fmt::format("cannot create a pipe to run {}", args.at(0)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  CommandResult result;
  if (spawned != 0) {
    close(pipe_fds[0]);
    result.status = 127;
    result.output = fmt::format("cannot start {}: not found in PATH", args[0]);
    return result;
  }
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buffer.data(), buffer.size());
    if (n > 0) {
      result.output.append(buffer.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

SlurmClient::SlurmClient() { checked({"scontrol", "ping"}); }

std::string SlurmClient::checked(const std::vector<std::string>& args) {
  const CommandResult r = run_command(args);
  if (r.status != 0) {
    throw CommError(
        fmt::format("Slurm is not reachable: `{}` failed with status {}: {}(is slurmctld running, and "
                    "SLURM_CONF set to its configuration? tools/slurm/cluster.sh starts a local one)",
                    fmt::join(args, " "), r.status, r.output));
  }
  return r.output;
}

std::string SlurmClient::submit(const std::vector<std::string>& options, const std::string& script,
                                const std::vector<std::string>& args) {
  std::vector<std::string> command{"sbatch", "--parsable"};
  command.insert(command.end(), options.begin(), options.end());
  command.push_back(script);
  command.insert(command.end(), args.begin(), args.end());
  std::string out = checked(command);
  // "<id>" or "<id>;<cluster>", then a newline.
  out = out.substr(0, out.find_first_of(";\n"));
  if (out.empty()) throw CommError(fmt::format("sbatch printed no job id for `{}`", fmt::join(command, " ")));
  return out;
}

std::map<std::string, std::string> SlurmClient::states(const std::vector<std::string>& ids) {
  std::map<std::string, std::string> out;
  if (ids.empty()) return out;
  // squeue refuses a list naming a job that has already left the queue on some versions, so ask
  // for every job and keep ours.
  std::istringstream lines(checked({"squeue", "-h", "-o", "%i %T"}));
  std::string id, state;
  while (lines >> id >> state) {
    for (const std::string& mine : ids) {
      if (mine == id) out[id] = state;
    }
  }
  return out;
}

void SlurmClient::requeue_hold(const std::string& id) { checked({"scontrol", "requeuehold", id}); }

void SlurmClient::release(const std::string& id) { checked({"scontrol", "release", id}); }

void SlurmClient::suspend(const std::string& id) { checked({"scontrol", "suspend", id}); }

void SlurmClient::resume(const std::string& id) { checked({"scontrol", "resume", id}); }

std::string SlurmClient::final_state(const std::string& id) {
  const CommandResult r = run_command({"scontrol", "show", "job", "-o", id});
  const std::size_t at = r.output.find("JobState=");
  if (r.status != 0 || at == std::string::npos) return "";
  const std::size_t from = at + 9;
  return r.output.substr(from, r.output.find(' ', from) - from);
}

void SlurmClient::cancel(const std::string& id) { checked({"scancel", id}); }

}  // namespace dtrain::schedule
