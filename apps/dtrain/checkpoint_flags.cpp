#include "apps/dtrain/checkpoint_flags.h"

#include <fmt/format.h>

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

std::unique_ptr<Checkpointer> make_checkpointer(const CheckpointFlags& f, Module& model, Optimizer& optimizer,
                                                ProcessGroup& group, nlohmann::json config,
                                                std::int64_t iterations_per_epoch, bool double_buffering, bool solo,
                                                std::function<void()> before_save) {
  if (f.dir.empty()) {
    if (f.resume || !f.every.empty()) throw InputError("--resume and --checkpoint-every need --checkpoint-dir DIR");
    return nullptr;
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
  o.group.rank = solo ? 0 : group.rank;
  o.group.size = solo ? 1 : group.size;
  o.before_save = std::move(before_save);
  if (group.active() && !solo) {
    o.group.allgather = [&group](void* all, std::size_t bytes_per_rank) {
      group.worker->run([&](comm::Communicator& c) { c.allgather(all, bytes_per_rank); });
    };
    o.group.broadcast = [&group](void* data, std::size_t bytes) {
      group.worker->run([&](comm::Communicator& c) { c.broadcast(data, bytes, 0); });
    };
  }
  if (group.rank == 0) o.note = [](const std::string& text) { fmt::print("checkpoint: {}\n", text); };
  return std::make_unique<Checkpointer>(std::move(o), model, optimizer);
}

}  // namespace dtrain::cli
