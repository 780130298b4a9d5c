#include "apps/dtrain/commands.h"
#include "core/error.h"

namespace dtrain::cli {

Command::Command() : app_("dtrain: data-parallel deep-learning training with a built-in performance model") {
  app_.require_subcommand(1);
  app_.set_version_flag("--version", "dtrain 0.1.0");
  app_.footer("Run 'dtrain SUBCOMMAND --help' for the flags of each subcommand.");
  actions_ = {register_train(app_),   register_bench(app_),  register_predict(app_), register_calibrate(app_),
              register_explain(app_), register_export(app_), register_schedule(app_)};
}

int Command::run() {
  for (auto& action : actions_) {
    const int rc = action();  // -1: that subcommand was not chosen
    if (rc >= 0) return rc;
  }
  return 0;
}

int run(const std::vector<std::string>& args) {
  Command command;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    command.app().parse(reversed);
  } catch (const CLI::ParseError& e) {
    // --help and --version end the parse with a success code, after which main prints.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return command.app().exit(e);
    throw InputError(e.what());
  }
  return command.run();
}

}  // namespace dtrain::cli
