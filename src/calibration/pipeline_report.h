// `dtrain train --pipeline K --profile FILE`: the model's pipeline step (perfmodel/
// pipeline_prediction.h) beside the measured one after each epoch, with this rank's stage's idle
// share predicted (the schedule's bubble and waits) and measured (the time the stage waited for
// activations, gradients, the loss and its replicas' sum). Both go into the epoch's log record.
#pragma once

#include "perfmodel/pipeline_prediction.h"
#include "train/trainer.h"

namespace dtrain::perf {

class PipelineReport : public Extension {
 public:
  // print: write the line to stdout (rank 0, stage 0).
  PipelineReport(PipelinePrediction prediction, int stage, bool print)
      : prediction_(std::move(prediction)), stage_(stage), print_(print) {}
  void on_epoch_end(TrainerState& s) override;

 private:
  PipelinePrediction prediction_;
  int stage_;
  bool print_;
};

}  // namespace dtrain::perf
