#!/usr/bin/env bash
# The long fuzzing run: every target to FUZZ_LONG_RUNS executions (default 10 M) or
# FUZZ_LONG_SECONDS of its own (default 3600), whichever comes first, two targets at a time (the
# machine's two cores). Corpora grow under .build/fuzz/ and are kept between runs, so a second
# run starts where the first stopped.
#
#   Fuzz/long.sh [TARGET...]       default: every target
#
# Prints one line per target: executions, seconds, corpus size, crashes; exits non-zero when a
# target crashed (its input in .build/fuzz/TARGET/artifacts) or stopped short of FUZZ_LONG_RUNS.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${FUZZ_LONG_RUNS:-10000000}
seconds=${FUZZ_LONG_SECONDS:-3600}
jobs=${FUZZ_LONG_JOBS:-2}
# Every folder of Fuzz/ with a harness (Fuzz/run.sh).
mapfile -t all < <(ls Fuzz/*/FuzzEntry.swift | cut -d/ -f2)
targets=("$@")
[ $# -gt 0 ] || targets=("${all[@]}")
report=.build/fuzz/long
mkdir -p "$report"

one() {
  local target=$1 start end status log corpus
  log="$report/$target.log"
  start=$(date +%s)
  FUZZ_RUNS=$runs Fuzz/run.sh "$seconds" "$target" >"$log" 2>&1
  status=$?
  corpus=.build/fuzz/$target/corpus
  end=$(date +%s)
  local executed
  executed=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$log" .build/fuzz/"$target"/last-run.log 2>/dev/null |
    tail -1 | grep -oE '[0-9]+$')
  local crashes=0
  [ $status -eq 0 ] || crashes=1
  printf 'fuzz-long %-15s %12s executions %6d s  corpus %6d  crashes %d\n' \
    "$target" "${executed:-?}" $((end - start)) "$(ls "$corpus" 2>/dev/null | wc -l)" "$crashes" |
    tee "$report/$target.line"
  [ $status -eq 0 ] && [ "${executed:-0}" -ge "$runs" ]
}

for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  (one "$target"; echo $? >"$report/$target.status") &
done
wait
failed=0
for target in "${targets[@]}"; do
  [ "$(cat "$report/$target.status" 2>/dev/null)" = 0 ] || failed=1
done
if [ $failed -ne 0 ]; then
  echo "fuzz-long: a target crashed or stopped short of $runs executions (logs in $report)" >&2
  exit 1
fi
echo "fuzz-long: every target passed $runs executions with no crash"
