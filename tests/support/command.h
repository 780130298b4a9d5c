// Runs a shell command in a test and keeps what it printed (the CLI tests' one way to run dtrain).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace dtrain::test_support {

struct CommandResult {
  int status = -1;      // exit status, -1 when the command did not exit normally
  std::string output;   // stdout and stderr together
};

inline CommandResult run_command(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) r.output += buf.data();
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace dtrain::test_support
