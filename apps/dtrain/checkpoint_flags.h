// The checkpoint flags of `dtrain train` (--checkpoint-dir, --checkpoint-every, --keep, --resume)
// and what they set up: a Checkpointer wired to the process group.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "apps/dtrain/distributed.h"
#include "train/checkpointer.h"

namespace dtrain::cli {

struct CheckpointFlags {
  std::string dir;
  std::string every;  // "" : every epoch
  int keep = 3;
  bool resume = false;
};

void add_checkpoint_flags(CLI::App& command, CheckpointFlags& flags);

// A job Slurm requeued (SLURM_RESTART_COUNT >= 1) with --checkpoint-dir resumes by itself, as if
// run with --resume: true when that turned --resume on.
bool resume_if_requeued(CheckpointFlags& flags);

// nullptr without --checkpoint-dir. It also makes the run preemption-safe (train/stop_signal.h):
// SIGTERM, SIGUSR1 or SIGUSR2 end it at the next step boundary (the next epoch's end with double
// buffering) with a checkpoint. Checks the flags (a step schedule cannot be combined with double
// buffering, whose in-flight gradients a checkpoint does not hold). Rank 0 prints notes.
// `solo`: this rank checkpoints alone, without collectives (parameter-server worker 0, whose
// model and optimizer `before_save` fills from the servers); `agree_stop` is then how it agrees
// on a stop with the ranks that stop with it (CheckpointerOptions::agree_stop; empty: alone).
std::unique_ptr<Checkpointer> make_checkpointer(const CheckpointFlags& flags, Module& model, Optimizer& optimizer,
                                                ProcessGroup& group, nlohmann::json config,
                                                std::int64_t iterations_per_epoch, bool double_buffering,
                                                bool solo = false, std::function<void()> before_save = {},
                                                std::function<int(int)> agree_stop = {});

// The options every checkpointer of a run shares (directory, schedule, keep, configuration);
// nullopt without --checkpoint-dir. The group, notes and before_save are the caller's.
std::optional<CheckpointerOptions> checkpointer_options(const CheckpointFlags& flags, nlohmann::json config,
                                                        std::int64_t iterations_per_epoch, bool double_buffering);

// A pipeline stage's checkpointer (parallel/pipeline_updater.h): its stage's parameters, batch-
// norm statistics and optimizer state in DIR/stage-S, written by replica 0 of the stage, read on
// resume by replica 0 and sent to the others (`replicas`: the stage's replicas as a checkpoint
// group). nullptr without --checkpoint-dir. Preemption-safe as make_checkpointer's: every rank
// of `world` (all stages) agrees on a stop, so every stage checkpoints the same step.
std::unique_ptr<Checkpointer> make_stage_checkpointer(const CheckpointFlags& flags, Module& stage, Optimizer& optimizer,
                                                      int stage_index, CheckpointGroup replicas, bool print_notes,
                                                      nlohmann::json config, std::int64_t iterations_per_epoch,
                                                      ProcessGroup& world);

}  // namespace dtrain::cli
