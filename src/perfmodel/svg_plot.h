// The scaling chart of `dtrain predict --plot`: time per epoch (log-log) and efficiency (log x)
// against workers, one line per exchange (algorithm), as a self-contained SVG file.
#pragma once

#include <string>
#include <vector>

#include "perfmodel/run_model.h"

namespace dtrain::perf {

// Runs with one worker start every line (they do not depend on the exchange).
std::string scaling_svg(const std::vector<RunPrediction>& runs, const std::string& title);

}  // namespace dtrain::perf
