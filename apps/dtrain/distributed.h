// The process group of a command started under mpirun: the MPI transport, a communicator and
// the communication thread every collective goes through. Absent when not launched by mpirun.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/hosts.h"
#include "parallel/comm_worker.h"
#include "train/evaluator.h"
#include "train/trace_recorder.h"

namespace dtrain::cli {

struct ProcessGroup {
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<CommWorker> worker;
  int rank = 0;
  int size = 1;

  comm::HostLayout hosts;  // where the ranks run (comm/hosts.h)

  bool active() const { return comm != nullptr; }
  // Ranks on this process's host, itself included (1 outside mpirun).
  int ranks_on_my_host() const {
    return active() ? static_cast<int>(hosts.members.at(static_cast<std::size_t>(hosts.host_of.at(rank))).size()) : 1;
  }
  // "32 KiB messages (2 hosts, network chunks)": the collectives' chunk size, for logs.
  std::string describe_chunk() const;
  // Sums a few values over all ranks (in f64 via two f32 halves would lose nothing for counts up
  // to 2^24; the values summed here are sample counts and loss sums).
  SumAcrossRanks summer();
  // Sums doubles over the ranks exactly alike on each (comm/exact_sum.h), through the worker;
  // empty where inactive.
  SumAcrossRanks exact_summer();
  // Rank 0's cache-line round trip between two cores (core/core_round_trip.h), measured while
  // the other ranks wait in a barrier (which every rank enters), so the probe finds the cores
  // free; nullopt on the other ranks and on one CPU.
  std::optional<double> core_round_trip();
  // Every rank's string on every rank, through the worker (for the trace); empty where inactive.
  GatherStrings string_gatherer();
};

// Joins the MPI job when the process was started by mpirun (collective timeout in seconds, 0:
// none; chunk_kb: the collectives' largest message in KiB, or "auto" for comm/hosts.h's choice by
// host layout, checked to agree across ranks); otherwise returns an inactive group. Throws
// InputError for a chunk_kb that is neither.
ProcessGroup join_process_group(double timeout_seconds, const std::string& chunk_kb = "auto");
// Adds --chunk-kb (stored in `chunk_kb`) to a command that joins the process group.
void add_chunk_flag(CLI::App& command, std::string& chunk_kb);
// The --chunk-kb text: 0 for "auto", else bytes.
std::size_t parse_chunk_kb(const std::string& text);

}  // namespace dtrain::cli
