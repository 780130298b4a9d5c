// Seconds spent per phase of a training step, as the metrics log and the performance model name
// them: data (waiting for the loader), forward, backward, communication exposed after backward,
// update.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace dtrain {

struct PhaseTimes {
  double data = 0, forward = 0, backward = 0, comm = 0, update = 0;

  double total() const { return data + forward + backward + comm + update; }
  PhaseTimes& operator+=(const PhaseTimes& o) {
    data += o.data;
    forward += o.forward;
    backward += o.backward;
    comm += o.comm;
    update += o.update;
    return *this;
  }
};

// {"data": s, "forward": s, "backward": s, "comm": s, "update": s}, as the metrics log and the
// predictions write them (nlohmann's to_json/from_json, so `json j = phases` works); a missing
// field reads as 0.
void to_json(nlohmann::json& j, const PhaseTimes& t);
void from_json(const nlohmann::json& j, PhaseTimes& t);

}  // namespace dtrain
