#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset: clang, ASan + UBSan) and runs each for SECONDS
# (default 60), two at a time, starting from the seed corpora in fuzz/corpus. CI leaves it out
# (its 25 minutes): run it after changing a file reader; for a longer search, e.g. an hour per
# target:
#   tools/fuzz.sh 3600                  # every target
#   tools/fuzz.sh 3600 safetensors      # one target
# New inputs that reach new code are kept in build/fuzz/corpus/TARGET (pass that directory to
# the next run, or copy small ones into fuzz/corpus/TARGET); a finding is written to
# build/fuzz/findings/TARGET-crash-* and the script fails printing how to reproduce it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(idx cifar10 safetensors hardware_profile)

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
out=build/fuzz
mkdir -p "$out/findings" "$out/logs"

run_one() {
  local t=$1
  local dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  mkdir -p "$out/corpus/$t"
  # The first directory receives new inputs; the committed seeds stay untouched.
  "$out/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$out/findings/$t-" "${dict[@]}" "$out/corpus/$t" "fuzz/corpus/$t" >"$out/logs/$t.log" 2>&1
}

failed=()
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  # Two at a time: one per core of the CI machine.
  if [ ${#pids[@]} -eq 2 ]; then
    wait "${pids[0]}" || failed+=("${names[0]}")
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${names[$i]}"); done

for t in "${targets[@]}"; do
  echo "fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$out/logs/$t.log" | awk '{print $2}') runs in ${seconds}s"
done
if [ ${#failed[@]} -gt 0 ]; then
  for t in "${failed[@]}"; do
    echo "=== fuzz_$t found a problem ==="
    tail -n 60 "$out/logs/$t.log"
    echo "reproduce: $out/fuzz/fuzz_$t $out/findings/$t-<file>"
  done
  exit 1
fi
