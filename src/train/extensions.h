// The standard extensions: evaluation after each epoch, the JSONL metrics log, and progress on
// the terminal (a bar when stdout is a terminal, one line per epoch otherwise).
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include "train/trainer.h"

namespace dtrain {

class EvaluatorExtension : public Extension {
 public:
  EvaluatorExtension(Module& model, const Dataset& data, const Sampler& sampler, LoaderOptions options,
                     SumAcrossRanks sum_across_ranks = {})
      : model_(model), data_(data), sampler_(sampler), options_(std::move(options)), sum_(std::move(sum_across_ranks)) {}
  void on_epoch_end(TrainerState& s) override;

 private:
  Module& model_;
  const Dataset& data_;
  const Sampler& sampler_;
  LoaderOptions options_;
  SumAcrossRanks sum_;
};

// One JSON object per line: a "config" record first, then one "epoch" record per epoch with
// loss, accuracy, samples/s, learning rate and seconds per phase (data, forward, backward, comm,
// update, eval).
class LogReport : public Extension {
 public:
  LogReport(const std::string& path, nlohmann::json config);
  void on_epoch_end(TrainerState& s) override;
  void write(const nlohmann::json& record);

 private:
  std::ofstream out_;
  std::string path_;
};

// Writes a "step" record (global iteration, learning rate, loss averaged over ranks, the writing
// rank's phase times of that step and the seconds since the start) to the metrics log every
// `every` steps: the per-step loss curve that data-parallel runs are compared on, and the step
// times whose jitter a mean per epoch hides. Every rank must have this extension (the average
// is a collective); only the writer passes a log.
class StepLog : public Extension {
 public:
  StepLog(LogReport* log, std::int64_t every, SumAcrossRanks sum_across_ranks)
      : log_(log), every_(every), sum_(std::move(sum_across_ranks)) {}
  void on_iteration(TrainerState& s) override;

 private:
  LogReport* log_;
  std::int64_t every_;
  SumAcrossRanks sum_;
};

class ProgressReport : public Extension {
 public:
  explicit ProgressReport(bool terminal) : terminal_(terminal) {}
  void on_start(TrainerState& s) override;
  void on_iteration(TrainerState& s) override;
  void on_epoch_end(TrainerState& s) override;

 private:
  bool terminal_;
  double last_draw_ = 0;
};

// Fills the standard fields of the epoch record (the log and the progress line read them).
void fill_epoch_record(TrainerState& s);

}  // namespace dtrain
