#include "apps/dtrain/distributed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "comm/agreement.h"
#include "core/error.h"
#include "parallel/core_probe.h"

#if DTRAIN_HAVE_MPI
#include "comm/mpi/mpi_transport.h"
#endif

namespace dtrain::cli {

std::optional<double> ProcessGroup::core_round_trip() { return core_round_trip_on_rank0(worker.get()); }

SumAcrossRanks ProcessGroup::summer() {
  if (!active()) return {};
  return [this](std::vector<double>& values) {
    std::vector<float> f(values.begin(), values.end());
    worker->run([&f](comm::Communicator& c) { c.allreduce(f.data(), f.size(), DType::kF32, comm::Algorithm::kTree); });
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = f[i];
  };
}

SumAcrossRanks ProcessGroup::exact_summer() {
  if (!active()) return {};
  return exact_sum_through(*worker);
}

GatherStrings ProcessGroup::string_gatherer() {
  if (!active()) return {};
  return [this](const std::string& mine) {
    std::vector<std::string> out;
    worker->run([&](comm::Communicator& c) {
      std::uint64_t n = mine.size(), longest = 0;
      std::vector<std::uint64_t> sizes(static_cast<std::size_t>(c.size()));
      c.allgather(&n, sizes.data(), sizeof n);
      for (std::uint64_t m : sizes) longest = std::max(longest, m);
      std::string padded = mine, all(longest * sizes.size(), '\0');
      padded.resize(longest);
      c.allgather(padded.data(), all.data(), longest);
      for (std::size_t r = 0; r < sizes.size(); ++r) out.push_back(all.substr(r * longest, sizes[r]));
    });
    return out;
  };
}

std::size_t parse_chunk_kb(const std::string& text) {
  if (text == "auto") return 0;
  std::size_t used = 0;
  double kb = 0;
  try {
    kb = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(kb >= 1) || kb > 1 << 20) {
    throw InputError(fmt::format("--chunk-kb takes 'auto' or a size in KiB from 1 to 1048576, got '{}'", text));
  }
  return static_cast<std::size_t>(kb * 1024);
}

ProcessGroup join_process_group(double timeout_seconds, const std::string& chunk_kb) {
  ProcessGroup g;
  const std::size_t chunk = parse_chunk_kb(chunk_kb);
#if DTRAIN_HAVE_MPI
  if (!comm::mpi_launched()) return g;
  // A training rank runs two busy threads, compute and communication, so one rank per core
  // oversubscribes the cores even where mpirun counts enough slots. Open MPI's blocking calls
  // (dtrain's `mpi` algorithm is a blocking MPI_Allreduce on the communication thread) spin
  // without yielding unless told the node is oversubscribed, and then take the core from the
  // rank's own compute thread: mlp's backward on 2 ranks of 2 cores went from 1.5 to 2.1 ms.
  // dtrain's own waits spin briefly, then yield (comm/mpi/mpi_transport.cpp); this makes MPI's
  // do the same, when all ranks share this host (shared memory: the spinning moves no data).
  // Across hosts the spinning thread is what keeps TCP's socket fed: yielding it to compute for a
  // time slice idled the link (lenet over 100 Mbit/s: 1.85 s a step spinning, 2.15 s yielding).
  // Read at MPI_Init; a value the user set (mpirun --mca or the environment) wins.
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (local != nullptr && world != nullptr && std::string_view(local) == world) {
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  }
  comm::CommOptions options;
  options.timeout_seconds = timeout_seconds;
  g.comm = std::make_unique<comm::Communicator>(comm::make_mpi_transport(), options);
  g.rank = g.comm->rank();
  g.size = g.comm->size();
  // Before the communication thread starts: the layout's allgather and the agreement check run
  // on this thread, with the default chunk, which every rank has.
  g.hosts = comm::host_layout(*g.comm);
  const std::size_t chosen = chunk > 0 ? chunk : comm::chunk_bytes_for(g.hosts);
  comm::check_agreement(*g.comm, {{"chunk_kb", fmt::format("{}", static_cast<double>(chosen) / 1024)}});
  g.comm->set_chunk_bytes(chosen);
  g.worker = std::make_unique<CommWorker>(*g.comm);
#else
  (void)timeout_seconds;
  (void)chunk;
#endif
  return g;
}

void add_chunk_flag(CLI::App& command, std::string& chunk_kb) {
  command
      .add_option("--chunk-kb", chunk_kb,
                  "Under mpirun: largest message of dtrain's collectives in KiB, or auto: 1024 on one host, 32 "
                  "across hosts (below Open MPI's TCP eager limit; docs/distributed.md)")
      ->capture_default_str();
}

std::string ProcessGroup::describe_chunk() const {
  if (!active()) return "";
  return fmt::format("{} KiB messages ({} host{}{})", comm->options().chunk_bytes >> 10, hosts.members.size(),
                     hosts.members.size() == 1 ? "" : "s", hosts.spans_hosts() ? ", network chunks" : "");
}

}  // namespace dtrain::cli
