#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy over the C++ sources (src, apps, python, tests, fuzz); any
# warning fails. The whole tree takes about 8 minutes on 2 cores, which CI's time budget leaves
# out: run it after changing C++ code, or name the files to check, e.g.
#   tools/tidy.sh src/comm/algorithms/ring.cpp tests/comm/allreduce_test.cpp
# A check that is wrong for one line is silenced on that line with NOLINT(check) and the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$tidy" ]; then
  echo "tools/tidy.sh: clang-tidy is not installed; apt-get install -y clang-tidy-14" >&2
  exit 2
fi
# The release preset is not a unity build, so its compile commands name every source file.
cmake --preset release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'src/*.cpp' 'apps/*.cpp' 'tests/*.cpp' 'fuzz/*.cpp' 'python/*.cpp')
fi
findings=$(printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 "$tidy" -p build/release --quiet 2>/dev/null |
  grep -E '(warning|error):' | sort -u || true)
if [ -n "$findings" ]; then
  echo "$findings"
  echo "tools/tidy.sh: $(echo "$findings" | wc -l) finding(s) in ${#files[@]} file(s)" >&2
  exit 1
fi
echo "tools/tidy.sh: ${#files[@]} file(s), no findings"
