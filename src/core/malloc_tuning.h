// glibc malloc serves blocks above its mmap threshold (128 KiB, adapting up to 32 MiB) with fresh
// mmap'ed pages and returns them on free, so a library that allocates a large scratch buffer per
// call (oneDNN's sgemm packs its operands into one, Open MPI allocates reduction buffers) pays a
// page fault per 4 KiB page on every call: about 11 us each on the development VM. Raising the
// thresholds keeps such blocks in the heap for reuse. These are the values the tuned PyTorch peer
// sets through GLIBC_TUNABLES (shared/peers/torch_tuned.sh); dtrain sets them itself at start-up.
#pragma once

namespace dtrain {

// mmap threshold 64 MiB, trim threshold 256 MiB. Call once, early, before threads start.
void tune_malloc_for_training();

}  // namespace dtrain
