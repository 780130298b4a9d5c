// Subcommands of the `dtrain` program. Each registers its flags on the parent and returns an
// action that runs the subcommand if it was chosen (returning the exit code) and -1 otherwise.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace dtrain::cli {

using Action = std::function<int()>;

Action register_train(CLI::App& app);
Action register_bench(CLI::App& app);
Action register_export(CLI::App& app);
Action register_predict(CLI::App& app);
Action register_calibrate(CLI::App& app);
Action register_explain(CLI::App& app);
// `bench allreduce`, a subcommand of `bench` (apps/dtrain/bench_allreduce.cpp).
Action register_bench_allreduce(CLI::App& bench);
// `bench cores` (apps/dtrain/bench_cores.cpp).
Action register_bench_cores(CLI::App& bench);

}  // namespace dtrain::cli
