#include "core/threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "core/error.h"

extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_parallel();
}

namespace dtrain {

void set_num_threads(int n) {
  if (n < 1) throw InputError(fmt::format("--threads must be at least 1 (got {})", n));
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int default_threads(int ranks_here) {
  const int mine = available_cpus();
  const int host = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (mine < host) return mine;
  return std::max(1, host / std::max(1, ranks_here));
}

const char* openblas_build() {
  switch (openblas_get_parallel()) {
    case 0:
      return "sequential";
    case 1:
      return "pthreads";
    case 2:
      return "OpenMP";
    default:
      return "unknown";
  }
}

}  // namespace dtrain
