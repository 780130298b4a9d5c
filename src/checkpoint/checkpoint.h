// Training checkpoints as safetensors files: everything a run needs to continue exactly where it
// stopped, and that other tools can read.
//
// Tensors: "model.NAME" for each parameter and buffer under its PyTorch-style name
// ("model.c1.weight", "model.b.running_mean"); "optimizer.SLOT.NAME" for the optimizer state
// ("optimizer.momentum.c1.weight"); in data-parallel runs "rank.R.NAME" for the buffers of ranks
// R >= 1 (batch-norm statistics are computed from each rank's own shard, so they differ).
// Metadata: "dtrain.format" ("checkpoint 1"), "dtrain.config" (the run's configuration, JSON),
// "dtrain.state" (position in the data, optimizer name and step count, dropout call counters,
// each rank's totals of the epoch in progress, the latest evaluation; JSON) and "dtrain.crc32"
// (of the data section, so a flipped bit in a tensor is caught like a cut-off file). All other
// randomness is a function of (seed, epoch, sample index) and needs no state.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace dtrain {

struct TrainingPosition {
  std::int64_t epoch = 0;            // epoch in progress, 0-based
  std::int64_t iteration = 0;        // global steps done
  std::int64_t epoch_iteration = 0;  // steps of `epoch` done
};

// One rank's running totals of the epoch in progress (for that epoch's log record).
struct EpochTotals {
  double loss_sum = 0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
};

struct CheckpointInfo {
  TrainingPosition position;
  nlohmann::json config = nlohmann::json::object();  // the run's flags
  int world_size = 1;
  std::vector<EpochTotals> rank_totals;  // one per rank (may be empty)
  nlohmann::json last_eval;              // null or {"loss", "accuracy", "correct", "samples"}
};

// Writes a checkpoint atomically. `other_rank_buffers[r - 1]` holds rank r's buffers in
// model.named_buffers() order (data-parallel runs; empty otherwise).
void write_checkpoint(const std::string& path, const Module& model, Optimizer& optimizer, const CheckpointInfo& info,
                      const std::vector<std::vector<Tensor>>& other_rank_buffers = {});

// A checkpoint file read and validated (format, checksum, metadata), not yet applied.
class Checkpoint {
 public:
  static Checkpoint read(const std::string& path);
  static Checkpoint parse(std::vector<std::uint8_t> bytes, const std::string& source);

  const CheckpointInfo& info() const { return info_; }
  const SafetensorsFile& file() const { return file_; }
  const std::string& source() const { return file_.source(); }
  const std::string& optimizer_name() const { return optimizer_name_; }
  std::int64_t optimizer_steps() const { return optimizer_steps_; }

  // Loads the checkpoint into the model and optimizer as `rank` of the run. Every tensor is
  // checked (present, same shape and type, nothing unexpected) before the first is copied, so on
  // error the model and optimizer are untouched. Throws DataError naming the file and the tensor.
  void restore(Module& model, Optimizer& optimizer, int rank = 0) const;
  // The "model." tensors, under their own names (what `dtrain export` writes).
  std::vector<const StEntry*> model_entries() const;

 private:
  explicit Checkpoint(SafetensorsFile file);

  SafetensorsFile file_;
  CheckpointInfo info_;
  std::string optimizer_name_;
  std::int64_t optimizer_steps_ = 0;
  nlohmann::json dropout_calls_ = nlohmann::json::object();
};

inline constexpr const char* kCheckpointModelPrefix = "model.";

}  // namespace dtrain
