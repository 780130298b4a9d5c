#include "apps/dtrain/distributed.h"

#if DTRAIN_HAVE_MPI
#include "comm/mpi/mpi_transport.h"
#endif

namespace dtrain::cli {

SumAcrossRanks ProcessGroup::summer() {
  if (!active()) return {};
  return [this](std::vector<double>& values) {
    std::vector<float> f(values.begin(), values.end());
    worker->run([&f](comm::Communicator& c) { c.allreduce(f.data(), f.size(), DType::kF32, comm::Algorithm::kTree); });
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = f[i];
  };
}

ProcessGroup join_process_group(double timeout_seconds) {
  ProcessGroup g;
#if DTRAIN_HAVE_MPI
  if (!comm::mpi_launched()) return g;
  comm::CommOptions options;
  options.timeout_seconds = timeout_seconds;
  g.comm = std::make_unique<comm::Communicator>(comm::make_mpi_transport(), options);
  g.worker = std::make_unique<CommWorker>(*g.comm);
  g.rank = g.comm->rank();
  g.size = g.comm->size();
#else
  (void)timeout_seconds;
#endif
  return g;
}

}  // namespace dtrain::cli
