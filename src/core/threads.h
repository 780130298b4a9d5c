// Compute threads. oneDNN and the OpenMP build of OpenBLAS share one OpenMP pool, so one call
// sets both; the data loader's thread is separate and not counted.
#pragma once

namespace dtrain {

// Sets the number of compute threads (OpenMP, and OpenBLAS when linked). n >= 1.
void set_num_threads(int n);
int num_threads();
// CPUs this process may run on (its affinity mask; at least 1).
int available_cpus();
// The compute threads a process gets by default when `ranks_here` ranks (>= 1) share its host:
// all of its CPUs when a launcher bound it to a subset (mpirun --bind-to core, Slurm's cpusets:
// the subset is already its share), else the host's CPUs divided among its ranks, each rank also
// running a communication thread, so that ranks x threads never exceeds the cores (2 ranks on 2
// cores with 2 threads each: LeNet ran 4x slower, OpenMP threads taking turns on the cores).
int default_threads(int ranks_here);
// Which OpenBLAS build is loaded ("OpenMP", "pthreads", "sequential"), for logs and benchmarks.
const char* openblas_build();

}  // namespace dtrain
