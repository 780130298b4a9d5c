#include "core/threads.h"

#include <omp.h>

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

const char* openblas_build() {
  switch (openblas_get_parallel()) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "OpenMP";
    default: return "unknown";
  }
}

}  // namespace dtrain
