#include "comm/benchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/timer.h"
#include "tensor/allocator.h"

namespace dtrain::comm {
namespace {

int default_iterations(std::size_t bytes) {
  if (bytes < (std::size_t{1} << 20)) return 200;
  if (bytes < (std::size_t{16} << 20)) return 20;
  return 5;
}

// Slowest rank's value: an allgather of one double per rank.
double max_over_ranks(Communicator& comm, double value) {
  std::vector<double> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(&value, all.data(), sizeof(double));
  for (double x : all) value = std::max(value, x);
  return value;
}

}  // namespace

std::vector<BenchRow> benchmark_allreduce(Communicator& comm, const BenchOptions& options) {
  const std::size_t elem = dtype_size(options.dtype);
  if (options.min_bytes < elem || options.max_bytes < options.min_bytes || options.factor < 2) {
    throw InputError(fmt::format("benchmark: need elem size <= min_bytes <= max_bytes and factor >= 2 (got {}, {}, {})",
                                 options.min_bytes, options.max_bytes, options.factor));
  }
  std::vector<Algorithm> algorithms = options.algorithms;
  if (algorithms.empty()) {
    for (Algorithm a : all_algorithms()) {
      if (a == Algorithm::kMpi && !comm.transport().has_native_allreduce()) continue;
      if (a == Algorithm::kShm && !comm.shares_memory()) continue;
      algorithms.push_back(a);
    }
  }
  const int p = comm.size();
  const bool print = options.out != nullptr && comm.rank() == 0;
  if (print) {
    fmt::print(options.out, "# allreduce benchmark: np={} transport={} dtype={} chunk={} B\n", p,
               comm.transport().name(), dtype_name(options.dtype), comm.options().chunk_bytes);
    fmt::print(options.out, "# {:>10} {:>10} {:>12} {:>9} {:>9} {:>6}\n", "bytes", "algorithm", "time_us", "algbw",
               "busbw", "iters");
  }
  // One buffer of the largest size for every measurement, in memory the ranks share where they
  // can (every algorithm runs on it; shm then reduces it in place, as a trainer's gradient buckets
  // allocated there are). Zeros keep the sums at zero, so repeated in-place calls never overflow or
  // reach subnormals (which would slow the adds).
  const std::size_t max_count = options.max_bytes / elem;
  Allocator& alloc = cpu_allocator();
  const bool given = options.buffer.size() >= max_count * elem;
  const bool shared = !given && std::find(algorithms.begin(), algorithms.end(), Algorithm::kShm) != algorithms.end() &&
                      comm.shares_memory();
  void* const buffer = given    ? options.buffer.data()
                       : shared ? comm.allocate_shared(max_count * elem).data()
                                : alloc.allocate(max_count * elem);
  const auto release = [&] {
    if (!given && !shared) alloc.deallocate(buffer, max_count * elem);
  };
  std::memset(buffer, 0, max_count * elem);
  std::vector<BenchRow> rows;
  try {
    for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
      const std::size_t count = bytes / elem;
      const int iters = options.iterations > 0 ? options.iterations : default_iterations(bytes);
      std::vector<std::vector<double>> times(algorithms.size());
      for (int rep = 0; rep < std::max(1, options.repeats); ++rep) {
        for (std::size_t k = 0; k < algorithms.size(); ++k) {
          const Algorithm a = algorithms[k];
          for (int i = 0; i < options.warmup; ++i) comm.allreduce(buffer, count, options.dtype, a);
          comm.barrier();
          const Stopwatch watch;
          for (int i = 0; i < iters; ++i) comm.allreduce(buffer, count, options.dtype, a);
          times[k].push_back(max_over_ranks(comm, watch.seconds() / iters));
        }
      }
      for (std::size_t k = 0; k < algorithms.size(); ++k) {
        std::sort(times[k].begin(), times[k].end());
        const double seconds = times[k][times[k].size() / 2];
        BenchRow row{algorithms[k], count * elem, count, iters, seconds, 0, 0};
        row.algbw_gbps = static_cast<double>(row.bytes) / seconds / 1e9;
        row.busbw_gbps = row.algbw_gbps * 2.0 * (p - 1) / p;
        rows.push_back(row);
        if (print) {
          fmt::print(options.out, "  {:>10} {:>10} {:>12.1f} {:>9.3f} {:>9.3f} {:>6}\n", row.bytes,
                     algorithm_name(row.algorithm), seconds * 1e6, row.algbw_gbps, row.busbw_gbps, iters);
          std::fflush(options.out);
        }
      }
    }
  } catch (...) {
    release();
    throw;
  }
  release();
  return rows;
}

}  // namespace dtrain::comm
