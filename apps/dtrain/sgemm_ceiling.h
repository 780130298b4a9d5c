// The practical fp32 ceiling of the cores a benchmark runs on: oneDNN's sgemm on square matrices,
// timed on this machine in the same run, so that `dtrain bench train`'s peak_fraction means the
// same on an AVX-512 core (about 197 GFLOP/s on the development machine) and on an AVX2 one (half
// that per clock), and follows ONEDNN_MAX_CPU_ISA as the training kernels do.
#pragma once

namespace dtrain::cli {

// GFLOP/s of the best of several n x n x n sgemm calls (2 n^3 flops each) made over about
// `seconds` on the current compute threads; the best call is the one least disturbed by other
// work on a shared machine.
double sgemm_ceiling_gflops(double seconds = 0.2, int n = 1024);

}  // namespace dtrain::cli
