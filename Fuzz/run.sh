#!/usr/bin/env bash
# The fuzz runner: builds each TARGET's libFuzzer harness with AddressSanitizer and runs it for
# SECONDS, one target after the other.
#
#   Fuzz/run.sh SECONDS TARGET...     TARGET: a folder of Fuzz/ with a FuzzEntry.swift
#
# Every target has the same layout: Fuzz/TARGET/FuzzEntry.swift, the harness (swiftlang
# docs/libFuzzerIntegration.md: LLVMFuzzerTestOneInput), which reaches the parsers through
# `@testable import`; and Fuzz/TARGET/corpus, its seeds and every crasher found so far, which the
# unit tests replay as regression inputs. Fuzz/build-module.sh builds the modules the harness
# imports from Sources/ unchanged, shared by the targets under .build/fuzz/modules, and links the
# harness against them (swiftc -sanitize=fuzzer,address).
#
# Each target runs on a working corpus, .build/fuzz/TARGET/corpus, seeded from Fuzz/TARGET/corpus
# and kept between runs. A crash leaves its input in .build/fuzz/TARGET/artifacts and exits
# non-zero; copy it into Fuzz/TARGET/corpus (and a test) as a regression input. Prints, for each
# target, the executions and whether anything crashed.
#
# Environment: FUZZ_RUNS=N stops each target after N executions (SECONDS is then a time limit);
# FUZZ_JOBS=N runs N libFuzzer jobs side by side (default 1: the machine's two cores are shared).
set -euo pipefail
cd "$(dirname "$0")/.."
. Fuzz/build-module.sh

usage="usage: Fuzz/run.sh SECONDS TARGET... (TARGET: $(ls Fuzz/*/FuzzEntry.swift | cut -d/ -f2 | paste -sd ' '))"
seconds=${1:?$usage}
shift
[ $# -gt 0 ] || { echo "$usage" >&2; exit 64; }
for target in "$@"; do
  [ -f "Fuzz/$target/FuzzEntry.swift" ] || { echo "Fuzz/run.sh: no target $target; $usage" >&2; exit 64; }
done

modules=.build/fuzz/modules

fuzz_one() {
  local target=$1 out=.build/fuzz/$1 max_len=4096 status runs log
  mkdir -p "$out/corpus" "$out/artifacts"
  case "$target" in
    # Just past the 255-byte limit of an advertisement, so over-long input is exercised too.
    frame-parser) max_len=300 ;;
  esac
  cp -n Fuzz/"$target"/corpus/* "$out/corpus/" 2>/dev/null || true

  # Keep the build log quiet unless it fails.
  if ! (fuzz_build "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz") >"$out/build.log" 2>&1; then
    cat "$out/build.log" >&2
    echo "fuzz $target: the harness did not build" >&2
    return 1
  fi

  log="$PWD/$out/last-run.log"
  local args=(-max_total_time="$seconds" -print_final_stats=1 -max_len="$max_len"
    -artifact_prefix="$PWD/$out/artifacts/")
  if [ -n "${FUZZ_RUNS:-}" ]; then args+=(-runs="$FUZZ_RUNS"); fi
  if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then args+=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
  rm -f "$out"/fuzz-*.log
  set +e
  # From $out: job mode writes its fuzz-N.log files into the working directory.
  (cd "$out" && ./fuzz "${args[@]}" corpus) >"$log" 2>&1
  status=$?
  set -e
  # The executions, summed over the jobs' logs in job mode.
  local logs=("$log") job
  for job in "$out"/fuzz-*.log; do if [ -e "$job" ]; then logs+=("$job"); fi; done
  runs=$(awk -F: '/^stat::number_of_executed_units:/ { total += $NF; n++ } END { print (n ? total : "?") }' \
    "${logs[@]}")
  if [ $status -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz $target: CRASHED after $runs executions; inputs in $out/artifacts" >&2
    return 1
  fi
  echo "fuzz $target: $runs executions (limit ${seconds} s), no crash (corpus: $(ls "$out/corpus" | wc -l) inputs)"
}

# The frame parsers' working corpus was .build/fuzz/corpus under a runner of their own: carried
# over, so that what the long runs grew is not lost.
if [ -d .build/fuzz/corpus ] && [ ! -e .build/fuzz/frame-parser/corpus ]; then
  mkdir -p .build/fuzz/frame-parser && mv .build/fuzz/corpus .build/fuzz/frame-parser/corpus
fi

for target in "$@"; do fuzz_one "$target"; done
