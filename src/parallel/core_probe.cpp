#include "parallel/core_probe.h"

#include "core/core_round_trip.h"

namespace dtrain {

std::optional<double> core_round_trip_on_rank0(CommWorker* worker) {
  const int rank = worker != nullptr ? worker->communicator().rank() : 0;
  std::optional<double> rt;
  if (rank == 0) rt = core_round_trip_seconds();
  if (worker != nullptr) worker->run([](comm::Communicator& c) { c.barrier(); });
  return rt;
}

}  // namespace dtrain
