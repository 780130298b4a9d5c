// dtrain: train deep networks on one or many processes, and predict how long training takes.
#include <cstdio>
#include <vector>

#include "apps/dtrain/commands.h"
#include "core/error.h"
#include "core/malloc_tuning.h"

int main(int argc, char** argv) {
  dtrain::tune_malloc_for_training();
  CLI::App app{"dtrain: data-parallel deep-learning training with a built-in performance model"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtrain 0.1.0");
  app.footer("Run 'dtrain SUBCOMMAND --help' for the flags of each subcommand.");
  std::vector<dtrain::cli::Action> actions{dtrain::cli::register_train(app), dtrain::cli::register_bench(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& action : actions) {
      const int rc = action();  // -1: that subcommand was not chosen
      if (rc >= 0) return rc;
    }
    return 0;
  } catch (const dtrain::InputError& e) {
    std::fprintf(stderr, "dtrain: error: %s\n", e.what());
    return 2;
  } catch (const dtrain::Error& e) {
    std::fprintf(stderr, "dtrain: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain: internal error: %s\n", e.what());
    return 3;
  }
}
