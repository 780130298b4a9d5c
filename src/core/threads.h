// Compute threads. oneDNN and the OpenMP build of OpenBLAS share one OpenMP pool, so one call
// sets both; the data loader's thread is separate and not counted.
#pragma once

namespace dtrain {

// Sets the number of compute threads (OpenMP, and OpenBLAS when linked). n >= 1.
void set_num_threads(int n);
int num_threads();
// Which OpenBLAS build is loaded ("OpenMP", "pthreads", "sequential"), for logs and benchmarks.
const char* openblas_build();

}  // namespace dtrain
