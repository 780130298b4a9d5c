// The process group of a command started under mpirun: the MPI transport, a communicator and
// the communication thread every collective goes through. Absent when not launched by mpirun.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "parallel/comm_worker.h"
#include "train/evaluator.h"

namespace dtrain::cli {

struct ProcessGroup {
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<CommWorker> worker;
  int rank = 0;
  int size = 1;

  bool active() const { return comm != nullptr; }
  // Sums a few values over all ranks (in f64 via two f32 halves would lose nothing for counts up
  // to 2^24; the values summed here are sample counts and loss sums).
  SumAcrossRanks summer();
};

// Joins the MPI job when the process was started by mpirun (collective timeout in seconds, 0:
// none); otherwise returns an inactive group.
ProcessGroup join_process_group(double timeout_seconds);

}  // namespace dtrain::cli
