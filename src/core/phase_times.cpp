#include "core/phase_times.h"

#include <nlohmann/json.hpp>

namespace dtrain {

void to_json(nlohmann::json& j, const PhaseTimes& t) {
  j = {{"data", t.data}, {"forward", t.forward}, {"backward", t.backward}, {"comm", t.comm}, {"update", t.update}};
}

void from_json(const nlohmann::json& j, PhaseTimes& t) {
  t.data = j.value("data", 0.0);
  t.forward = j.value("forward", 0.0);
  t.backward = j.value("backward", 0.0);
  t.comm = j.value("comm", 0.0);
  t.update = j.value("update", 0.0);
}

}  // namespace dtrain
