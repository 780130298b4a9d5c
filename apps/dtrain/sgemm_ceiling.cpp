#include "apps/dtrain/sgemm_ceiling.h"

#include <algorithm>
#include <vector>

#include "core/timer.h"
#include "tensor/kernels/cpu/gemm.h"

namespace dtrain::cli {

double sgemm_ceiling_gflops(double seconds, int n) {
  const auto elements = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<float> a(elements), b(elements), c(elements, 0.0f);
  for (std::size_t i = 0; i < elements; ++i) {
    a[i] = 1e-3f * static_cast<float>(i % 97);
    b[i] = 1e-3f * static_cast<float>(i % 89);
  }
  // The ceiling is oneDNN's whatever library the linear layers were told to use.
  const GemmLibrary chosen = gemm_library();
  set_gemm_library(GemmLibrary::kOneDnn);
  const auto call = [&] { sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  call();  // first touch of c, and oneDNN's kernel generation
  double best = 0;
  const Stopwatch total;
  for (int calls = 0; calls < 3 || total.seconds() < seconds; ++calls) {
    const Stopwatch sw;
    call();
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) / sw.seconds() / 1e9);
  }
  set_gemm_library(chosen);
  return best;
}

}  // namespace dtrain::cli
