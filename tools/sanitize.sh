#!/usr/bin/env bash
# The test suite under sanitizers. `tools/sanitize.sh asan` (what CI runs): the suite under
# AddressSanitizer + UndefinedBehaviorSanitizer (the asan preset; the few tests left to the plain
# suite are named below). `tools/sanitize.sh tsan`: the comm, parallel and ps tests under
# ThreadSanitizer (the tsan preset; their MPI runs are left to ASan, since Open MPI itself is not
# built for TSan); run it after changing threads, locks or the transports: its build and run take
# about 5 minutes on 2 cores, which CI's time budget leaves out. `tools/sanitize.sh` (or `all`)
# runs both. Extra arguments go to the ctest runs, e.g. tools/sanitize.sh asan -R Checkpoint.
# Warnings are the ci preset's business: at -O1 with instrumentation GCC reports null
# dereferences that cannot happen, so these builds do not use -Werror. The asan preset compiles
# with clang 14 (its OpenMP runtime, libomp, beside the libgomp of OpenBLAS's OpenMP build): GCC
# 12's UBSan instrumentation tripled the compile time of a unity file (69 s against 24 s for
# ASan alone; clang 31 s), and the asan build took 8 of CI's 19 minutes. `-Wno-pass-failed`:
# clang cannot vectorize the `omp simd` loops through ASan's checks, and says so at each.
set -euo pipefail
cd "$(dirname "$0")/.."
which=all
case "${1:-}" in
  asan | tsan | all) which=$1; shift ;;
esac
supp="$PWD/tools/sanitizers"
# Any report fails the test; leaks inside the uninstrumented system libraries (Open MPI, OpenMP)
# are suppressed by name, ours are not.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"

if [ "$which" != tsan ]; then
  cmake --preset asan >/dev/null
  if [ "${DTRAIN_ASAN_MPI:-1}" != 0 ]; then
    cmake --build --preset asan
  else
    # Without the MPI pass below, its drivers (test_*_mpi) and bench_comm are not built: 5 of the
    # build's 54 compiler runs under ASan, and their links.
    targets=$(cmake --build --preset asan --target help | sed -n 's/^\(test_[a-z_]*\): phony$/\1/p' | grep -v '_mpi$')
    # shellcheck disable=SC2086 # one target per word
    cmake --build --preset asan --target dtrain_cli example_train_mlp $targets
  fi
  # Left to the plain suite: the python-labelled test (PyTorch reading an export: python, not our
  # code, is the subject), the pymodule ones (the Python module, which python3 cannot load without
  # the sanitizer's runtime; the asan build leaves it out), the install one (an instrumented
  # library installs for instrumented users only), AllreduceCost (message counting on the same
  # transport), AllreduceExact.RandomData (the same code paths as ClosedForm*, which stay) and
  # PipelineTiming (a schedule's wall-clock time against the model's: the instrumented code around
  # each sleeping stage put GPipe K=4 m=2 at +5.9% of the 5% it allows; the runner's code runs in
  # the other pipeline tests). For CI's 25 minutes, also the four slowest under ASan (14-26 s each)
  # whose code others run here: Allreduce.ScaledSum... (the algorithms run in
  # AllreduceExact.ClosedForm*), PipelineRunner.TwentySteps... and EverySchedulesStep... (the
  # runner runs in EveryStageAndMicroBatchCount...) and Cli.SameSeedSameRun (the command's training
  # path runs in the CheckpointCli tests).
  ctest --preset asan -j2 -LE 'mpi|python|pymodule|install' \
    -E 'AllreduceCost\.|AllreduceExact\.RandomData|PipelineTiming\.|Allreduce\.ScaledSumAndOneFiniteVerdictOnEveryRank|PipelineRunner\.(TwentyStepsOfTraining|EverySchedulesStep)|Cli\.SameSeedSameRun' "$@"
  # Open MPI leaks memory allocated by components it has unloaded by exit, so no suppression can
  # name them: the runs under mpirun are checked for everything but leaks. Left to the plain
  # suite: 5 to 8 oversubscribed ranks (the code of 1 to 4), the loss curves of the other
  # algorithms (comm_mpi_np* check each algorithm) and the netns variants (the same code over TCP;
  # the two-host calibration also checks the shaped link's burst it measures against the one set,
  # which an instrumented build under load measured at 115 KiB of 256 once, passing on reruns), and
  # ps_faults (processes stopped and killed from outside: the code it reaches is ps_cli's and the
  # unit tests' timeouts) and ps_stop (signals from outside, timed against the log; the stop path
  # runs in stop_agreement_test and resume_test), and mpi_sync_bn (three ResNet-20 runs; synchronized batch norm's code
  # runs under the threads transport in sync_batch_norm_test), the pipeline CLI runs (their
  # code runs in pipeline_mpi_np*), and calibrate_mpi_time_shared (two ranks taking turns on one
  # CPU, 51 s instrumented: the same calibration code as calibrate_mpi_same_host, with the
  # unsynchronised blocks whose arithmetic calibration_test's Turns* cases check), and the Slurm
  # runs (slurm_start, slurm: minutes of waiting on the cluster for the training code the other
  # runs check; the stop-signal path runs in resume_test's signal cases), and, for CI's 25 minutes,
  # ps_cli (the parameter-server command's flag and mode matrix, 20 s plain: the protocol code runs
  # in ps_mpi_np3/np4 and the ps unit tests) and calibrate_mpi_same_host (14 s plain: the
  # calibration's arithmetic runs in calibration_test, its MPI runs in the plain suite only).
  # DTRAIN_ASAN_MPI=0 leaves this pass out (CI does, for its 25 minutes: about 100 s here; run
  # tools/sanitize.sh asan after changing MPI code).
  if [ "${DTRAIN_ASAN_MPI:-1}" != 0 ]; then
    ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" ctest --preset asan -j2 -L mpi \
      -E 'comm_mpi_np[5-8]|mpi_loss_curve_(tree|butterfly|onetoall|mpi)|netns_loss_curve|calibrate_netns|calibrate_mpi_time_shared|calibrate_mpi_same_host|ps_cli|ps_faults|ps_stop|mpi_sync_bn|mpi_pipeline_|^slurm' "$@"
  fi

fi

if [ "$which" != asan ]; then
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan --target test_comm test_parallel test_ps
  # One OpenMP and one OpenBLAS thread: their runtimes are not built with TSan, so their barriers
  # are invisible to it and every parallel kernel would be reported (and each suppressed report
  # costs milliseconds: a LeNet test took minutes instead of seconds). dtrain's own threads, the
  # subject here, are unaffected. AllreduceExact.RandomData* (up to 9 ranks, 5003 elements, every
  # algorithm and wire type: about 45 s each under TSan) run in the other suites; under TSan the
  # same algorithms and threads are covered by AllreduceExact.ClosedFormSmallChunks, which cuts
  # messages into many small chunks (the most interleavings); so are ClosedFormAllWorldSizesAndCounts
  # and AllreduceCost (about 13 s and 8 s each under TSan), which the other suites run.
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ctest --preset tsan -j2 -L '^(comm|parallel|ps)$' -LE mpi \
    -E 'AllreduceExact\.(RandomData|ClosedFormAllWorldSizesAndCounts)|AllreduceCost\.' "$@"
fi
