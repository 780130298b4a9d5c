// MPI backend (built when DTRAIN_MPI is on; DTRAIN_HAVE_MPI is then defined). Messages are
// MPI_Isend/MPI_Irecv of bytes on a private duplicate of MPI_COMM_WORLD (so dtrain's tags never
// meet anyone else's); waits poll MPI_Testall against the collective deadline, so a dead peer
// ends in a CommError instead of a hang. The communicator's error handler is MPI_ERRORS_RETURN:
// every failing MPI call becomes a CommError carrying MPI's error string.
#pragma once

#include <memory>

#include "comm/transport.h"

namespace dtrain::comm {

// Initialises MPI once per process (MPI_Init_thread asking for MPI_THREAD_SERIALIZED, so a
// background communication thread may make the calls) and registers MPI_Finalize to run at exit.
// Safe to call again; argc/argv may be null. Throws CommError if MPI cannot start or was already
// finalised.
void mpi_initialize(int* argc = nullptr, char*** argv = nullptr);
// True when this process was started by mpirun/mpiexec (Open MPI, MPICH or PMI environment), so
// the caller can choose the MPI transport without initialising MPI first.
bool mpi_launched();
// Ends the whole job with `code` (MPI_Abort on MPI_COMM_WORLD); for the command line's fatal-error
// path, never called by the library itself.
[[noreturn]] void mpi_abort(int code);

// A transport over a duplicate of MPI_COMM_WORLD (initialises MPI if needed). It offers the
// native MPI_Allreduce (algorithm "mpi").
std::unique_ptr<Transport> make_mpi_transport();

}  // namespace dtrain::comm
