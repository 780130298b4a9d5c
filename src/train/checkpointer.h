// Checkpoints during training and exact resume (checkpoint/checkpoint.h has the file contents).
//
// When: every N steps or every N epochs, and always after the last epoch. A checkpoint due at
// the last step of an epoch is written at the epoch's end instead, after evaluation, so it records
// the evaluation and a resumed run starts cleanly at the next epoch. Every rank decides from the
// global step alone, so all ranks agree without talking.
//
// Data-parallel runs: every rank takes part in writing (one allgather of each rank's batch-norm
// statistics and epoch totals, the only state that differs between ranks); rank 0 alone writes
// the file. On resume rank 0 picks the newest valid checkpoint and sends its bytes to every rank,
// so all ranks restore the same state even without a shared file system.
//
// Exactness: parameters, optimizer state and step count, batch-norm statistics and dropout
// counters are restored bit for bit; data order and augmentation are functions of (seed, epoch,
// sample index); the trainer skips the steps of the resumed epoch already done. So a resumed run
// computes exactly what the uninterrupted run would have (given the same thread count).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "train/trainer.h"

namespace dtrain {

struct CheckpointSchedule {
  std::int64_t every = 0;  // 0: only after the last epoch
  bool epochs = false;     // `every` counts epochs rather than steps
};
// Parses --checkpoint-every: "N" or "Nsteps" (steps), "Ne" or "Nepochs" (epochs), N >= 1.
CheckpointSchedule parse_checkpoint_schedule(std::string_view text);

// The processes of a data-parallel run as checkpoints need them; the collectives are unset in a
// single process.
struct CheckpointGroup {
  int rank = 0;
  int size = 1;
  // In place: `all` holds `size` blocks of bytes_per_rank, this rank's at rank * bytes_per_rank;
  // afterwards every block holds its rank's.
  std::function<void(void* all, std::size_t bytes_per_rank)> allgather;
  // Copies rank 0's bytes to every rank.
  std::function<void(void* data, std::size_t bytes)> broadcast;
};

// The largest of the group's `mine` (stop signals, 0: none): one allgather of 4 bytes per rank.
int largest_over(const CheckpointGroup& group, int mine);

struct CheckpointerOptions {
  std::string dir;
  CheckpointSchedule schedule;
  int keep = 3;  // newest checkpoints kept (0: all)
  // The run's configuration: stored in every checkpoint; on resume it must equal the
  // checkpoint's except for the keys in `may_differ`.
  nlohmann::json config = nlohmann::json::object();
  std::vector<std::string> may_differ{"epochs", "threads"};
  std::int64_t iterations_per_epoch = 0;  // to check a resumed position against
  CheckpointGroup group;
  // Messages for the user (resumed from, skipped a corrupt file); rank 0's are printed.
  std::function<void(const std::string&)> note;
  // Called before each checkpoint is taken, on every rank: brings state held elsewhere into the
  // model and optimizer (parameter-server worker 0 fetches the servers' weights and optimizer
  // state, ps/ps_updater.h).
  std::function<void()> before_save;
  // Preemption (train/stop_signal.h): the signal this rank received, 0 when none. When set, the
  // ranks agree after every step (one allgather of 4 bytes each); once any has one, a checkpoint
  // is written at that step and the run stops (TrainerState::stopped_by), except after the last
  // epoch, which ends the run anyway.
  std::function<int()> stop_signal;
  // How the ranks that must stop together agree: given this rank's signal (0: none), the largest
  // any of them received. Empty: the checkpoint group agrees (one allgather). A pipeline's stages
  // agree over the whole world, parameter-server workers through worker 0 (ps/ps_worker.h).
  std::function<int(int)> agree_stop;
  // False where a step boundary holds state a checkpoint cannot (double buffering's gradients in
  // flight): a stop then waits for the epoch's end.
  bool stop_mid_epoch = true;
};

class Checkpointer {
 public:
  // Creates the directory and removes stale temporaries (rank 0).
  Checkpointer(CheckpointerOptions options, Module& model, Optimizer& optimizer);

  // Restores the newest valid checkpoint into the model and optimizer, skipping (and reporting)
  // corrupt ones, and returns the global step to continue from; 0 when there is none. Throws
  // InputError when the checkpoint's configuration differs from this run's.
  // With `at_most` >= 0, the newest valid one at or before that global step.
  std::int64_t resume(std::int64_t at_most = -1);
  // The global step of the newest valid checkpoint, 0 when there is none: rank 0 of the group
  // looks, every rank gets its answer (a pipeline's stages agree on a step with it first).
  std::int64_t newest_step();
  // The extension that writes checkpoints. Add it after the evaluator (so a checkpoint at an
  // epoch's end records that epoch's evaluation); it restores the resumed epoch's totals.
  std::unique_ptr<Extension> extension();

  const CheckpointerOptions& options() const { return options_; }
  const CheckpointDir& directory() const { return dir_; }

 private:
  friend class CheckpointExtension;
  void save(const TrainerState& s, bool epoch_end);
  // The stop signal any rank of the group received (the largest number), 0 when none.
  int agreed_stop_signal();

  std::int64_t last_saved_step_ = -1;

  CheckpointerOptions options_;
  Module& model_;
  Optimizer& optimizer_;
  CheckpointDir dir_;
  EpochTotals resumed_totals_;  // this rank's, of the resumed epoch
};

}  // namespace dtrain
