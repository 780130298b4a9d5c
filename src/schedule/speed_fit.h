// Optimus's resource-speed model for synchronous training with the parameter-server terms left
// out (Peng et al., EuroSys 2018, section 3.2: the time of a step is a B / w + b + c w for w
// workers and global batch B): here the seconds of a job's whole work at w ranks,
//   T(w) = a / w + b + c w,   a, b, c >= 0,
// the computation that splits over the ranks (a; dtrain's per-rank batch is fixed, so the work's
// compute shrinks as 1/w), what does not shrink (b) and what grows with the ranks (c:
// communication, stragglers). Fitted by non-negative least squares to measured points with each
// point's error relative to its time, so long and short runs weigh alike.
#pragma once

#include <utility>
#include <vector>

namespace dtrain::schedule {

struct SpeedCurve {
  double a = 0, b = 0, c = 0;
  double at(double ranks) const { return a / ranks + b + c * ranks; }
};

// points: (ranks, seconds), seconds > 0. With fewer than three distinct rank counts the fit uses
// fewer terms (a alone for one count). Exact points of such a curve give it back.
SpeedCurve fit_speed_curve(const std::vector<std::pair<double, double>>& points);

}  // namespace dtrain::schedule
