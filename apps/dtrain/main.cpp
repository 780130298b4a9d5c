// dtrain: train deep networks on one or many processes, and predict how long training takes.
#include <cstdio>

#include "apps/dtrain/commands.h"
#include "core/error.h"
#include "core/malloc_tuning.h"

#if DTRAIN_HAVE_MPI
#include "comm/mpi/mpi_transport.h"
#endif

namespace {

// Prints the error; under mpirun also ends the other ranks at once (MPI_Abort) instead of leaving
// them to wait for this one until their collective timeout.
int fail(int code, const char* kind, const char* what) {
  std::fprintf(stderr, "dtrain: %s: %s\n", kind, what);
  std::fflush(stderr);
#if DTRAIN_HAVE_MPI
  if (dtrain::comm::mpi_launched()) dtrain::comm::mpi_abort(code);
#endif
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    dtrain::tune_malloc_for_training();
    dtrain::cli::Command command;
    try {
      command.app().parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return command.app().exit(e);
    }
    return command.run();
  } catch (const dtrain::InputError& e) {
    return fail(2, "error", e.what());
  } catch (const dtrain::Error& e) {
    return fail(1, "error", e.what());
  } catch (const std::exception& e) {
    return fail(3, "internal error", e.what());
  }
}
