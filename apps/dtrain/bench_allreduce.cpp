// `dtrain bench allreduce`: time, algbw and busbw of every allreduce algorithm, with
// MPI_Allreduce measured in the same run, for message sizes 1 KiB .. 64 MiB (comm/benchmark.h
// does the measuring). Under mpirun it uses the MPI transport; started alone it runs --ranks
// ranks as threads of this process (the local backend), which has no MPI baseline.
//
// --chunk-kb may list several pipeline chunk sizes; each size is then measured with every one,
// interleaved, which is how the automatic chunk (comm/hosts.h) is checked against the transport at
// hand ("auto" in the list stands for it). After the
// table it prints one `best` line per size: the fastest of dtrain's own algorithms (and chunk)
// against MPI_Allreduce, the ratio the project's target is stated in.
//
// --profile FILE adds the performance model's time for each row (perfmodel/allreduce_time.h: the
// algorithm's own cost function at the profile's alpha, beta and gamma, or the profile's timed
// points for mpi and shm) and its error against the measured time, then the median and largest
// error: the communication term of `dtrain predict` checked on its own, without the training
// step around it.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "apps/dtrain/commands.h"
#include "apps/dtrain/distributed.h"
#include "comm/benchmark.h"
#include "comm/hosts.h"
#include "comm/local_transport.h"
#include "core/error.h"
#include "perfmodel/allreduce_time.h"

#if DTRAIN_HAVE_MPI
#include "comm/mpi/mpi_transport.h"
#endif

namespace dtrain::cli {
namespace {

struct BenchAllreduceOptions {
  std::string min_size = "1K";
  std::string max_size = "64M";
  std::size_t factor = 4;
  std::string dtype = "f32";
  std::string algorithms;  // comma separated; empty: all
  int repeats = 3;
  int iterations = 0;
  int warmup = 3;
  std::string chunk_kb = "auto";  // comma-separated list
  double timeout = 300;
  int ranks = 2;        // local backend only
  std::string profile;  // --profile: print the model's time beside each row
};

// "65536", "64K", "64KiB", "4M", "1G" (binary multiples) -> bytes.
std::size_t parse_size(const std::string& text) {
  std::size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit;
  for (std::size_t i = pos; i < text.size(); ++i) unit += static_cast<char>(std::toupper(text[i]));
  if (unit == "B" || unit.empty()) unit = "";
  static const std::map<std::string, int> shifts{{"", 0},    {"K", 10},   {"KB", 10}, {"KIB", 10}, {"M", 20},
                                                 {"MB", 20}, {"MIB", 20}, {"G", 30},  {"GB", 30},  {"GIB", 30}};
  const auto it = shifts.find(unit);
  if (pos == 0 || it == shifts.end()) {
    throw InputError(fmt::format("bad size '{}': expected a number of bytes with an optional K, M or G", text));
  }
  return static_cast<std::size_t>(value) << it->second;
}

std::vector<comm::Algorithm> parse_algorithms(const std::string& list) {
  std::vector<comm::Algorithm> out;
  for (std::size_t start = 0; start < list.size();) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    if (end > start) out.push_back(comm::parse_algorithm(list.substr(start, end - start)));
    start = end + 1;
  }
  if (std::find(out.begin(), out.end(), comm::Algorithm::kAuto) != out.end()) {
    throw InputError("--algorithms lists concrete algorithms; 'auto' is one of them at every size");
  }
  return out;
}

struct Measured {
  comm::Algorithm algorithm;
  std::size_t chunk_bytes;  // 0 for MPI_Allreduce (not chunked by dtrain)
  std::size_t bytes;
  int iterations;
  double seconds;              // median over rounds
  std::vector<double> rounds;  // seconds per round, in round order (rounds interleave the algorithms)
};

// The median over rounds of MPI_Allreduce's time over the algorithm's in the same round: the
// two ran seconds apart, so a change of the machine's state between rounds (a busy neighbour, a
// VM's CPUs moved to other cores: core/core_round_trip.h) cancels out of each round's ratio.
double paired_ratio(const Measured& mpi, const Measured& algorithm) {
  std::vector<double> ratios;
  for (std::size_t r = 0; r < std::min(mpi.rounds.size(), algorithm.rounds.size()); ++r) {
    ratios.push_back(mpi.rounds[r] / algorithm.rounds[r]);
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
}

// Runs on every rank with one communicator per chunk size (all over the same transport). For
// each size, round after round: every algorithm at every chunk size, MPI_Allreduce and shm once
// (they cut no chunks), so that noise on a shared machine hits all of them alike. Where the ranks
// share memory, the first communicator's buffer is shared memory (shm reduces it in place, as a
// trainer's buckets; every algorithm on that communicator runs on it).
bool ignores_chunks(comm::Algorithm a) { return a == comm::Algorithm::kMpi || a == comm::Algorithm::kShm; }

std::vector<Measured> measure(std::vector<std::unique_ptr<comm::Communicator>>& comms, comm::BenchOptions bench,
                              std::size_t max_bytes, int repeats) {
  std::vector<comm::Algorithm> first = bench.algorithms;
  if (first.empty()) {
    for (comm::Algorithm a : comm::all_algorithms()) {
      if (a == comm::Algorithm::kMpi && !comms[0]->transport().has_native_allreduce()) continue;
      if (a == comm::Algorithm::kShm && !comms[0]->shares_memory()) continue;
      first.push_back(a);
    }
  }
  std::vector<comm::Algorithm> own = first;
  std::erase_if(own, ignores_chunks);
  std::span<std::byte> shared;
  if (std::find(first.begin(), first.end(), comm::Algorithm::kShm) != first.end()) {
    shared = comms[0]->allocate_shared(max_bytes);
  }
  std::vector<Measured> out;
  for (std::size_t bytes = bench.min_bytes; bytes <= max_bytes; bytes *= bench.factor) {
    std::map<std::pair<comm::Algorithm, std::size_t>, std::vector<double>> times;
    int iterations = 0;
    for (int rep = 0; rep < repeats; ++rep) {
      for (std::size_t k = 0; k < comms.size(); ++k) {
        bench.min_bytes = bench.max_bytes = bytes;
        bench.algorithms = k == 0 ? first : own;
        bench.buffer = k == 0 ? shared : std::span<std::byte>();
        if (bench.algorithms.empty()) continue;
        for (const comm::BenchRow& r : comm::benchmark_allreduce(*comms[k], bench)) {
          const std::size_t chunk = ignores_chunks(r.algorithm) ? 0 : comms[k]->options().chunk_bytes;
          times[{r.algorithm, chunk}].push_back(r.seconds);
          iterations = r.iterations;
        }
      }
    }
    for (auto& [key, t] : times) {
      std::vector<double> sorted = t;
      std::sort(sorted.begin(), sorted.end());
      out.push_back({key.first, key.second, bytes, iterations, sorted[sorted.size() / 2], t});
    }
  }
  return out;
}

// The model's seconds for a measured row, on `profile` with p workers.
double modelled_seconds(const Measured& r, int p, DType dtype, const perf::Profile& profile) {
  perf::AllreducePlan plan;
  plan.algorithm = r.algorithm;
  plan.workers = p;
  plan.dtype = dtype;
  if (r.chunk_bytes > 0) plan.chunk_bytes = r.chunk_bytes;
  return perf::allreduce_time(plan, r.bytes / dtype_size(dtype), profile).seconds;
}

// Median and largest absolute error of the model over the rows, with the row of the largest.
void print_model_summary(const std::vector<Measured>& rows, const std::vector<double>& model) {
  std::vector<double> errors;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    errors.push_back(std::abs(model[i] / rows[i].seconds - 1));
    if (errors.back() > errors[worst]) worst = i;
  }
  if (errors.empty()) return;
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  fmt::print("model rows={} median_abs_error={:.1f}% max_abs_error={:.1f}% (bytes={} algorithm={})\n", rows.size(),
             100 * sorted[sorted.size() / 2], 100 * errors[worst], rows[worst].bytes,
             comm::algorithm_name(rows[worst].algorithm));
}

void print_table(const std::vector<Measured>& rows, int p, const std::string& transport, DType dtype, int repeats,
                 const perf::Profile* profile) {
  const double bus = 2.0 * (p - 1) / p;  // as nccl-tests: 0 for one rank, where nothing moves
  fmt::print("# allreduce benchmark: np={} transport={} dtype={} repeats={} (median round)\n", p, transport,
             dtype_name(dtype), repeats);
  if (profile != nullptr) fmt::print("# model_us: the performance model on the profile '{}'\n", profile->name);
  fmt::print("# {:>10} {:>10} {:>8} {:>12} {:>9} {:>9} {:>6}{}\n", "bytes", "algorithm", "chunk_kb", "time_us", "algbw",
             "busbw", "iters", profile != nullptr ? fmt::format(" {:>10} {:>7}", "model_us", "error") : "");
  std::vector<double> model;
  for (const Measured& r : rows) {
    const double algbw = static_cast<double>(r.bytes) / r.seconds / 1e9;
    fmt::print("  {:>10} {:>10} {:>8} {:>12.1f} {:>9.3f} {:>9.3f} {:>6}", r.bytes, comm::algorithm_name(r.algorithm),
               r.chunk_bytes ? std::to_string(r.chunk_bytes >> 10) : "-", r.seconds * 1e6, algbw, algbw * bus,
               r.iterations);
    if (profile != nullptr) {
      model.push_back(modelled_seconds(r, p, dtype, *profile));
      fmt::print(" {:>10.1f} {:>+6.1f}%", model.back() * 1e6, 100 * (model.back() / r.seconds - 1));
    }
    fmt::print("\n");
  }
  if (profile != nullptr) print_model_summary(rows, model);
  // Per size: dtrain's fastest algorithm (and chunk size) against MPI_Allreduce.
  std::map<std::size_t, const Measured*> best, mpi;
  for (const Measured& r : rows) {
    if (r.algorithm == comm::Algorithm::kMpi) {
      mpi[r.bytes] = &r;
    } else if (!best.contains(r.bytes) || r.seconds < best[r.bytes]->seconds) {
      best[r.bytes] = &r;
    }
  }
  fmt::print(
      "# dtrain's best algorithm per size (ratio = MPI_Allreduce's time / the best's, median over rounds of the "
      "ratio within a round)\n");
  for (const auto& [bytes, b] : best) {
    fmt::print("best bytes={} algorithm={} chunk_kb={} time_us={:.1f} busbw={:.3f}", bytes,
               comm::algorithm_name(b->algorithm), b->chunk_bytes ? std::to_string(b->chunk_bytes >> 10) : "-",
               b->seconds * 1e6, static_cast<double>(bytes) / b->seconds / 1e9 * bus);
    if (mpi.contains(bytes)) {
      const Measured& m = *mpi[bytes];
      fmt::print(" mpi_time_us={:.1f} mpi_busbw={:.3f} ratio={:.3f}", m.seconds * 1e6,
                 static_cast<double>(bytes) / m.seconds / 1e9 * bus, paired_ratio(m, *b));
    }
    fmt::print("\n");
  }
  std::fflush(stdout);
}

// "auto,64,1024" -> {0, 65536, 1048576} (0: the host layout's choice, comm/hosts.h).
std::vector<std::size_t> parse_chunks(const std::string& list) {
  std::vector<std::size_t> out;
  for (std::size_t start = 0; start < list.size();) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    out.push_back(parse_chunk_kb(list.substr(start, end - start)));
    start = end + 1;
  }
  if (out.empty()) throw InputError("--chunk-kb needs at least one value");
  return out;
}

int bench_allreduce(const BenchAllreduceOptions& o) {
  comm::BenchOptions bench;
  bench.min_bytes = parse_size(o.min_size);
  const std::size_t max_bytes = parse_size(o.max_size);
  bench.factor = o.factor;
  bench.dtype = parse_dtype(o.dtype);
  if (bench.dtype != DType::kF32 && bench.dtype != DType::kF16 && bench.dtype != DType::kBF16) {
    throw InputError(fmt::format("--dtype must be f32, f16 or bf16, got '{}'", o.dtype));
  }
  if (bench.min_bytes < dtype_size(bench.dtype) || max_bytes < bench.min_bytes) {
    throw InputError(fmt::format("need {} <= --min-bytes <= --max-bytes", dtype_size(bench.dtype)));
  }
  bench.algorithms = parse_algorithms(o.algorithms);
  bench.iterations = o.iterations;
  bench.warmup = o.warmup;
  bench.out = nullptr;
  const std::vector<std::size_t> chunks = parse_chunks(o.chunk_kb);
  std::optional<perf::Profile> profile;
  if (!o.profile.empty()) profile = perf::load_profile(o.profile);

  // One communicator per chunk size over the same transport.
  auto body = [&](comm::Transport& t) {
    std::vector<std::unique_ptr<comm::Communicator>> comms;
    std::size_t automatic = 0;
    if (std::count(chunks.begin(), chunks.end(), 0) > 0) {
      comm::Communicator probe(t, comm::CommOptions{o.timeout});
      automatic = comm::chunk_bytes_for(comm::host_layout(probe));
    }
    for (std::size_t c : chunks) {
      if (c == 0) c = automatic;
      comms.push_back(std::make_unique<comm::Communicator>(t, comm::CommOptions{o.timeout, c}));
    }
    const auto rows = measure(comms, bench, max_bytes, o.repeats);
    if (t.rank() == 0) {
      print_table(rows, t.size(), std::string(t.name()), bench.dtype, o.repeats, profile ? &*profile : nullptr);
    }
  };
#if DTRAIN_HAVE_MPI
  if (comm::mpi_launched()) {
    body(*comm::make_mpi_transport());
    return 0;
  }
#endif
  comm::run_local_transports(o.ranks, body);
  return 0;
}

}  // namespace

Action register_bench_allreduce(CLI::App& bench) {
  auto o = std::make_shared<BenchAllreduceOptions>();
  CLI::App* a = bench.add_subcommand(
      "allreduce",
      "Allreduce time, algbw and busbw (= algbw * 2(p-1)/p) per size for every algorithm and MPI_Allreduce "
      "(run under mpirun; alone: --ranks threads of one process)");
  a->add_option("--min-bytes", o->min_size, "Smallest message (bytes; K, M, G suffixes)")->capture_default_str();
  a->add_option("--max-bytes", o->max_size, "Largest message")->capture_default_str();
  a->add_option("--factor", o->factor, "Size step factor")->capture_default_str()->check(CLI::Range(2, 1 << 20));
  a->add_option("--dtype", o->dtype, "Element type on the wire: f32, f16 or bf16")->capture_default_str();
  a->add_option("--algorithms", o->algorithms,
                "Comma-separated subset of ring, tree, butterfly, onetoall, mpi, shm (default: all this layout can "
                "run; shm needs every rank on one host)");
  a->add_option("--repeats", o->repeats, "Interleaved rounds per size; the median round is reported")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  a->add_option("--iterations", o->iterations, "Timed calls per round (0: 200 below 1 MiB, 20 below 16 MiB, 5 above)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  a->add_option("--warmup", o->warmup, "Untimed calls before each round")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  a->add_option("--chunk-kb", o->chunk_kb,
                "Largest point-to-point message of the pipelined algorithms, KiB, or auto (by host layout, as "
                "training chooses it); a comma-separated list measures each (interleaved)")
      ->capture_default_str();
  a->add_option("--timeout", o->timeout, "Seconds a collective may wait for a peer (0: forever)")
      ->capture_default_str();
  a->add_option("--ranks", o->ranks, "Without mpirun: ranks as threads of this process")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  a->add_option("--profile", o->profile,
                "Also print the performance model's time for each row on this profile (a JSON file from dtrain "
                "calibrate, or built-in names as dtrain predict takes them) and its error");
  return [a, o]() { return a->parsed() ? bench_allreduce(*o) : -1; };
}

}  // namespace dtrain::cli
