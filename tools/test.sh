#!/usr/bin/env bash
# The whole test suite, as CI runs it: warnings as errors, every test (MPI ones under mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci -j2 "$@"
