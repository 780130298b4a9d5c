// Subcommands of the `dtrain` program. Each registers its flags on the parent and returns an
// action that runs the subcommand if it was chosen (returning the exit code) and -1 otherwise.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace dtrain::cli {

using Action = std::function<int()>;

Action register_train(CLI::App& app);
Action register_bench(CLI::App& app);
Action register_export(CLI::App& app);
Action register_predict(CLI::App& app);
Action register_calibrate(CLI::App& app);
Action register_explain(CLI::App& app);
Action register_schedule(CLI::App& app);
// `bench allreduce`, a subcommand of `bench` (apps/dtrain/bench_allreduce.cpp).
Action register_bench_allreduce(CLI::App& bench);
// `bench cores` (apps/dtrain/bench_cores.cpp).
Action register_bench_cores(CLI::App& bench);

// The dtrain command line: every subcommand registered on one CLI::App. main.cpp parses argv into
// it; the Python module (python/) parses an argument list through run(), so both check and run
// every flag with the same code.
class Command {
 public:
  Command();
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  CLI::App& app() { return app_; }
  // After a parse: runs the chosen subcommand and returns its exit code.
  int run();

 private:
  CLI::App app_;
  std::vector<Action> actions_;  // their lambdas point into app_
};

// Parses `args` (the arguments after the program name, e.g. {"train", "--epochs", "1"}) and runs
// the subcommand: its exit code. Errors throw as they do in main, a bad flag as InputError with
// CLI11's message; --help prints the help and returns 0.
int run(const std::vector<std::string>& args);

}  // namespace dtrain::cli
