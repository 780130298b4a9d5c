#include "comm/benchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "comm/message_buffer.h"
#include "core/error.h"
#include "core/timer.h"

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
  // Each algorithm runs on the memory a trainer's gradient buckets would be in: shm on memory the
  // ranks share (it reduces there in place), the others on private huge pages
  // (message_buffer.h), each one buffer of the largest size. Zeros keep the sums at zero, so
  // repeated in-place calls never overflow or reach subnormals (which would slow the adds).
  const std::size_t max_count = options.max_bytes / elem;
  const bool runs_shm = std::find(algorithms.begin(), algorithms.end(), Algorithm::kShm) != algorithms.end();
  const bool runs_private =
      std::any_of(algorithms.begin(), algorithms.end(), [](Algorithm a) { return a != Algorithm::kShm; });
  std::byte* shared = nullptr;
  if (runs_shm && options.buffer.size() >= max_count * elem) {
    shared = options.buffer.data();
  } else if (runs_shm && comm.shares_memory()) {
    shared = comm.allocate_shared(max_count * elem).data();
  }
  if (shared != nullptr) std::memset(shared, 0, max_count * elem);
  MessageBuffer own;
  if (runs_private || shared == nullptr) own.grow(max_count * elem);
  const auto buffer_for = [&](Algorithm a) -> void* {
    return a == Algorithm::kShm && shared != nullptr ? shared : own.data();
  };
  std::vector<BenchRow> rows;
  for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    const std::size_t count = bytes / elem;
    const int iters = options.iterations > 0 ? options.iterations : default_iterations(bytes);
    std::vector<std::vector<double>> times(algorithms.size());
    for (int rep = 0; rep < std::max(1, options.repeats); ++rep) {
      for (std::size_t k = 0; k < algorithms.size(); ++k) {
        const Algorithm a = algorithms[k];
        void* const buffer = buffer_for(a);
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
  return rows;
}

}  // namespace dtrain::comm
