#include "train/stop_extension.h"

#include <utility>

#include "train/stop_signal.h"

namespace dtrain {

StopExtension::StopExtension(std::function<int(int)> agree, bool stop_mid_epoch)
    : agree_(std::move(agree)), stop_mid_epoch_(stop_mid_epoch) {
  install_stop_signals();
}

void StopExtension::on_iteration(TrainerState& s) {
  if (stop_check_after_step(s, stop_mid_epoch_)) stop_if_signalled(s);
}

void StopExtension::on_epoch_end(TrainerState& s) {
  if (stop_check_after_epoch(s)) stop_if_signalled(s);
}

void StopExtension::stop_if_signalled(TrainerState& s) {
  const int signal = agree_(stop_signal_received());
  if (signal != 0) s.stopped_by = signal_name(signal);
}

}  // namespace dtrain
