#include "calibration/pipeline_report.h"

#include <fmt/format.h>

#include <cstdio>

#include "perfmodel/report.h"

namespace dtrain::perf {

void PipelineReport::on_epoch_end(TrainerState& s) {
  if (s.epoch_iteration <= 0 || s.epoch_train_seconds <= 0) return;
  const double measured = s.epoch_train_seconds / static_cast<double>(s.epoch_iteration);
  const double predicted = prediction_.step_s;
  const auto k = static_cast<std::size_t>(stage_);
  // The stage's idle share of the step: the schedule's idle time plus the replicas' sum and the
  // other stages' slower update (the step ends with the slowest), over the step.
  const double predicted_idle =
      (prediction_.clock.idle_s.at(k) + predicted - prediction_.clock.step_s - prediction_.update_s.at(k)) / predicted;
  const double measured_idle = s.epoch_times.comm / s.epoch_train_seconds;
  s.record["predicted_step_s"] = predicted;
  s.record["measured_step_s"] = measured;
  s.record["predicted_idle"] = predicted_idle;
  s.record["measured_idle"] = measured_idle;
  if (!print_) return;
  fmt::print(
      "epoch {}/{} per step: predicted {} (stage {} idle {:.0f}%), measured {} (stage {} waited {:.0f}%): {:+.1f}%\n",
      s.epoch + 1, s.epochs, format_seconds(predicted), stage_, 100 * predicted_idle, format_seconds(measured), stage_,
      100 * measured_idle, 100 * (predicted - measured) / measured);
  std::fflush(stdout);
}

}  // namespace dtrain::perf
