// Child processes for the end-to-end checkpoint tests: start the dtrain binary (or mpirun) in its
// own process group with output to a file, wait with a deadline, find an MPI rank's process, and
// SIGKILL it.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace dtrain::cktest {

// A whole file ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Splits at spaces; '' is an empty argument (no shell runs in between).
inline std::vector<std::string> split_args(const std::string& args) {
  std::istringstream in(args);
  std::vector<std::string> out{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
  for (std::string& a : out) {
    if (a == "''") a.clear();
  }
  return out;
}

class Child {
 public:
  // Starts argv with stdout and stderr to `output`, in a new process group; `env` entries
  // ("NAME=value") are added to this process's environment.
  Child(const std::vector<std::string>& argv, const std::string& output, const std::vector<std::string>& env = {})
      : output_(output) {
    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
    envs.insert(envs.end(), env.begin(), env.end());
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : envs) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    if (posix_spawn(&pid_, args[0], &actions, &attr, args.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  ~Child() {
    if (running()) {
      ::kill(-pid_, SIGKILL);
      wait(30);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !status_; }
  // The raw wait status, or nothing when the process is still running after `seconds`.
  std::optional<int> wait(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (running()) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        status_ = st;
        break;
      }
      if (r < 0 || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status_;
  }
  // Kills the whole process group (mpirun and its ranks).
  void kill_group() {
    if (pid_ > 0) ::kill(-pid_, SIGKILL);
  }
  std::string output() const { return slurp(output_); }

 private:
  std::string output_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

inline bool exited_with(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// The pid of the process whose environment holds every one of `vars` ("NAME=value"), if any.
inline pid_t find_process_with_env(const std::vector<std::string>& vars) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* d = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(d->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    const std::string env = slurp("/proc/" + std::string(d->d_name) + "/environ");
    bool all = true;
    for (const std::string& v : vars) {
      const std::string needle = v + '\0';
      all = all && (env.compare(0, needle.size(), needle) == 0 || env.find('\0' + needle) != std::string::npos);
    }
    if (all && !vars.empty()) {
      found = pid;
      break;
    }
  }
  ::closedir(proc);
  return found;
}

}  // namespace dtrain::cktest
