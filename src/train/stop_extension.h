// Where a run looks for a stop signal (train/stop_signal.h), and the ranks that stop without
// writing a checkpoint. Every rank of a run must take part in the same agreements, or one waits
// for another that has left: the checkpointer (train/checkpointer.h) and StopExtension both look
// after every step that does not end an epoch (where that boundary can be checkpointed) and after
// every epoch but the last (the last ends the run anyway).
#pragma once

#include <functional>

#include "train/trainer.h"

namespace dtrain {

inline bool stop_check_after_step(const TrainerState& s, bool stop_mid_epoch) {
  return stop_mid_epoch && s.epoch_iteration != s.iterations_per_epoch;
}
inline bool stop_check_after_epoch(const TrainerState& s) { return s.epoch + 1 < s.epochs; }

// A rank that writes no checkpoint but stops with the one that does (parameter-server workers
// other than worker 0, whose checkpoint holds the servers' state): at each of the checkpointer's
// checks this rank's signal joins the same agreement (`agree`: this rank's signal in, the
// largest any rank received out), and the run ends where the writer's does
// (TrainerState::stopped_by). Installs the stop signals' handler.
class StopExtension : public Extension {
 public:
  explicit StopExtension(std::function<int(int)> agree, bool stop_mid_epoch = true);
  void on_iteration(TrainerState& s) override;
  void on_epoch_end(TrainerState& s) override;

 private:
  void stop_if_signalled(TrainerState& s);
  std::function<int(int)> agree_;
  bool stop_mid_epoch_;
};

}  // namespace dtrain
