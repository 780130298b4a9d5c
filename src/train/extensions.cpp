#include "train/extensions.h"

#include <fmt/format.h>

#include "core/timer.h"

namespace dtrain {

void EvaluatorExtension::on_epoch_end(TrainerState& s) {
  s.last_eval = evaluate(model_, data_, sampler_, options_, sum_);
}

void fill_epoch_record(TrainerState& s) {
  nlohmann::json& r = s.record;
  if (r.contains("epoch")) return;
  r["type"] = "epoch";
  r["epoch"] = s.epoch + 1;
  r["iteration"] = s.iteration;
  r["lr"] = s.lr;
  r["train_loss"] = s.epoch_mean_loss();
  r["train_accuracy"] = s.epoch_accuracy();
  r["samples_per_s"] = s.epoch_samples_per_second();
  r["epoch_seconds"] = s.epoch_train_seconds;
  r["elapsed_s"] = now_seconds() - s.start_time;
  const PhaseTimes& t = s.epoch_times;
  r["time"] = t;
  if (s.last_eval) {
    r["test_loss"] = s.last_eval->loss;
    r["test_accuracy"] = s.last_eval->accuracy;
    r["test_samples"] = s.last_eval->samples;
    r["time"]["eval"] = s.last_eval->seconds;
  }
}

LogReport::LogReport(const std::string& path, nlohmann::json config) : out_(path, std::ios::trunc), path_(path) {
  if (!out_)
    throw InputError(fmt::format("cannot write the metrics log '{}' (--log): check the directory exists", path));
  config["type"] = "config";
  out_ << config.dump() << '\n';
  out_.flush();
}

void LogReport::on_epoch_end(TrainerState& s) {
  fill_epoch_record(s);
  write(s.record);
}

void LogReport::write(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
  if (!out_) throw DataError(fmt::format("writing the metrics log '{}' failed (disk full?)", path_));
}

void StepLog::on_iteration(TrainerState& s) {
  if (every_ <= 0 || (s.iteration - 1) % every_ != 0) return;
  std::vector<double> loss{s.last.loss};
  double ranks = 1;
  if (sum_) {
    loss.push_back(1.0);
    sum_(loss);
    ranks = loss[1];
  }
  if (log_ != nullptr) {
    log_->write({{"type", "step"},
                 {"iteration", s.iteration - 1},
                 {"epoch", s.epoch + 1},
                 {"lr", s.lr},
                 {"loss", loss[0] / ranks},
                 {"time", s.last.times},  // this rank's phases of the step: step-to-step jitter
                 {"elapsed_s", now_seconds() - s.start_time}});
  }
}

void ProgressReport::on_start(TrainerState& s) {
  if (!terminal_) std::fflush(stdout);
  (void)s;
}

void ProgressReport::on_iteration(TrainerState& s) {
  if (!terminal_) return;
  const double now = now_seconds();
  if (now - last_draw_ < 0.2 && s.epoch_iteration != s.iterations_per_epoch) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const double frac =
      static_cast<double>(s.epoch_iteration) / static_cast<double>(std::max<std::int64_t>(1, s.iterations_per_epoch));
  const int filled = static_cast<int>(frac * kWidth);
  const double elapsed = s.epoch_times.total();
  const double rate = elapsed > 0 ? static_cast<double>(s.epoch_samples * s.world_size) / elapsed : 0;
  fmt::print("\repoch {}/{} [{}{}] {}/{} loss {:.4f} acc {:.4f} {:.0f} samples/s ", s.epoch + 1, s.epochs,
             std::string(static_cast<std::size_t>(filled), '#'),
             std::string(static_cast<std::size_t>(kWidth - filled), '.'), s.epoch_iteration, s.iterations_per_epoch,
             s.epoch_mean_loss(), s.epoch_accuracy(), rate);
  std::fflush(stdout);
}

void ProgressReport::on_epoch_end(TrainerState& s) {
  fill_epoch_record(s);
  const nlohmann::json& r = s.record;
  std::string line = fmt::format("epoch {}/{} train_loss {:.4f} train_acc {:.4f}", s.epoch + 1, s.epochs,
                                 r["train_loss"].get<double>(), r["train_accuracy"].get<double>());
  if (s.last_eval) line += fmt::format(" test_loss {:.4f} test_acc {:.4f}", s.last_eval->loss, s.last_eval->accuracy);
  line += fmt::format(" {:.0f} samples/s {:.1f} s (elapsed {:.1f} s)", r["samples_per_s"].get<double>(),
                      s.epoch_train_seconds, r["elapsed_s"].get<double>());
  fmt::print("{}{}\n", terminal_ ? "\r\033[K" : "", line);
  std::fflush(stdout);
}

}  // namespace dtrain
