#!/usr/bin/env bash
# The whole test suite, as CI runs it: warnings as errors, every test (MPI ones under mpirun).
# The ci preset is a unity build (8 source files per compiler run, a third of the clean-build
# time), so names local to a .cpp file must be unique within their target.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci -j2 "$@"
