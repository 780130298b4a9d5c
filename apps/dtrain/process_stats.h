// Resource use of this process, for benchmark reports.
#pragma once

#include <sys/resource.h>

namespace dtrain::cli {

struct ProcessStats {
  double peak_rss_mb = 0;
  long minor_faults = 0;
  long major_faults = 0;
};

inline ProcessStats process_stats() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {static_cast<double>(u.ru_maxrss) / 1024.0, u.ru_minflt, u.ru_majflt};
}

}  // namespace dtrain::cli
