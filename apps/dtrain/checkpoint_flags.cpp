#include "apps/dtrain/checkpoint_flags.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "train/stop_signal.h"

namespace dtrain::cli {

void add_checkpoint_flags(CLI::App& command, CheckpointFlags& flags) {
  command.add_option("--checkpoint-dir", flags.dir,
                     "Write checkpoints (safetensors files, written atomically) to this directory; rank 0 writes");
  command.add_option(
      "--checkpoint-every", flags.every,
      "With --checkpoint-dir: checkpoint every N steps (N or Nsteps) or every N epochs (Ne); default every "
      "epoch. The last epoch always ends with one");
  command.add_option("--keep", flags.keep, "With --checkpoint-dir: newest checkpoints to keep (0: all)")
      ->capture_default_str();
  command.add_flag(
      "--resume", flags.resume,
      "Continue from the newest valid checkpoint in --checkpoint-dir (corrupt ones are reported and skipped; "
      "none: start afresh). Pass the flags of the interrupted run");
}

bool resume_if_requeued(CheckpointFlags& flags) {
  const char* restarts = std::getenv("SLURM_RESTART_COUNT");
  if (flags.dir.empty() || flags.resume || restarts == nullptr || std::atoi(restarts) < 1) return false;
  flags.resume = true;
  return true;
}

namespace {

// Every rank of the process group as a checkpoint group (its collectives on the group's thread).
CheckpointGroup whole_group(ProcessGroup& group) {
  CheckpointGroup g;
  g.rank = group.rank;
  g.size = group.size;
  if (group.active()) {
    g.allgather = [&group](void* all, std::size_t bytes_per_rank) {
      group.worker->run([&](comm::Communicator& c) { c.allgather(all, bytes_per_rank); });
    };
    g.broadcast = [&group](void* data, std::size_t bytes) {
      group.worker->run([&](comm::Communicator& c) { c.broadcast(data, bytes, 0); });
    };
  }
  return g;
}

// Preemption-safe: a stop signal ends the run at a step boundary with a checkpoint.
void stop_on_signals(CheckpointerOptions& o, bool double_buffering, std::function<int(int)> agree_stop) {
  install_stop_signals();
  o.stop_signal = stop_signal_received;
  o.stop_mid_epoch = !double_buffering;
  o.agree_stop = std::move(agree_stop);
}

}  // namespace

std::unique_ptr<Checkpointer> make_checkpointer(const CheckpointFlags& f, Module& model, Optimizer& optimizer,
                                                ProcessGroup& group, nlohmann::json config,
                                                std::int64_t iterations_per_epoch, bool double_buffering, bool solo,
                                                std::function<void()> before_save, std::function<int(int)> agree_stop) {
  std::optional<CheckpointerOptions> options =
      checkpointer_options(f, std::move(config), iterations_per_epoch, double_buffering);
  if (!options) return nullptr;
  CheckpointerOptions& o = *options;
  if (!solo) o.group = whole_group(group);
  o.before_save = std::move(before_save);
  if (group.rank == 0) o.note = [](const std::string& text) { fmt::print("checkpoint: {}\n", text); };
  stop_on_signals(o, double_buffering, std::move(agree_stop));
  return std::make_unique<Checkpointer>(std::move(o), model, optimizer);
}

std::unique_ptr<Checkpointer> make_stage_checkpointer(const CheckpointFlags& f, Module& stage, Optimizer& optimizer,
                                                      int stage_index, CheckpointGroup replicas, bool print_notes,
                                                      nlohmann::json config, std::int64_t iterations_per_epoch,
                                                      ProcessGroup& world) {
  std::optional<CheckpointerOptions> options = checkpointer_options(f, std::move(config), iterations_per_epoch, false);
  if (!options) return nullptr;
  stop_on_signals(*options, false, [all = whole_group(world)](int mine) { return largest_over(all, mine); });
  options->dir = (std::filesystem::path(f.dir) / fmt::format("stage-{}", stage_index)).string();
  options->group = std::move(replicas);
  if (print_notes) {
    options->note = [stage_index](const std::string& text) {
      fmt::print("checkpoint (stage {}): {}\n", stage_index, text);
    };
  }
  return std::make_unique<Checkpointer>(std::move(*options), stage, optimizer);
}

std::optional<CheckpointerOptions> checkpointer_options(const CheckpointFlags& f, nlohmann::json config,
                                                        std::int64_t iterations_per_epoch, bool double_buffering) {
  if (f.dir.empty()) {
    if (f.resume || !f.every.empty()) throw InputError("--resume and --checkpoint-every need --checkpoint-dir DIR");
    return std::nullopt;
  }
  CheckpointerOptions o;
  o.dir = f.dir;
  o.schedule = f.every.empty() ? CheckpointSchedule{1, true} : parse_checkpoint_schedule(f.every);
  if (double_buffering && !o.schedule.epochs) {
    throw InputError(
        "--checkpoint-every in steps cannot be combined with --double-buffering (a checkpoint does not "
        "hold the gradients in flight); checkpoint every N epochs with --checkpoint-every Ne");
  }
  o.keep = f.keep;
  o.config = std::move(config);
  o.iterations_per_epoch = iterations_per_epoch;
  return o;
}

}  // namespace dtrain::cli
