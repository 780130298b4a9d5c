// Allreduce benchmark driver for measurements by hand (the CLI's `dtrain bench` calls the same
// library function): mpirun -np N bench_comm [dtype] [min_bytes] [max_bytes] [factor] [chunk_bytes] [repeats]
//        [algorithms, comma-separated]
#include <algorithm>
#include <cstdlib>
#include <string>

#include "comm/benchmark.h"
#include "comm/mpi/mpi_transport.h"

int main(int argc, char** argv) {
  using namespace dtrain::comm;
  mpi_initialize(&argc, &argv);
  BenchOptions options;
  CommOptions comm_options;
  if (argc > 1) options.dtype = dtrain::parse_dtype(argv[1]);
  if (argc > 2) options.min_bytes = std::stoull(argv[2]);
  if (argc > 3) options.max_bytes = std::stoull(argv[3]);
  if (argc > 4) options.factor = std::stoull(argv[4]);
  if (argc > 5) comm_options.chunk_bytes = std::stoull(argv[5]);
  if (argc > 6) options.repeats = std::stoi(argv[6]);
  if (argc > 7) {
    const std::string list = argv[7];
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = std::min(list.find(',', start), list.size());
      options.algorithms.push_back(parse_algorithm(list.substr(start, end - start)));
      start = end + 1;
    }
  }
  Communicator comm(make_mpi_transport(), comm_options);
  benchmark_allreduce(comm, options);
  return 0;
}
