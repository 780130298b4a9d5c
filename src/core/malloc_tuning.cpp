#include "core/malloc_tuning.h"

#include <malloc.h>

namespace dtrain {

void tune_malloc_for_training() {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

}  // namespace dtrain
