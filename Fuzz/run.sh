#!/usr/bin/env bash
# Builds the libFuzzer harness for the frame parsers (AD structures, iBeacon, AltBeacon, Eddystone)
# with AddressSanitizer, and runs it.
#
#   Fuzz/run.sh [SECONDS]          default 30
#
# Environment: FUZZ_OUT (build and corpus folder, default .build/fuzz), FUZZ_JOBS (parallel
# jobs, default 1; this machine has two cores shared with other builds). Crashes are written to $FUZZ_OUT/artifacts; replay one with
# `$FUZZ_OUT/frame-parser-fuzz FILE`.
set -euo pipefail

seconds="${1:-30}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${FUZZ_OUT:-$root/.build/fuzz}"
mkdir -p "$out/corpus" "$out/artifacts"

# The frame parsers' module, BeaconCore from Sources/ unchanged, and the harness linked against
# it (Fuzz/build-module.sh).
. "$root/Fuzz/build-module.sh"
fuzz_module "$out/frame-modules" BeaconCore "" $(find "$root/Sources/BeaconCore" -name '*.swift' | sort)
fuzz_link "$out/frame-modules" "$root/Fuzz/FrameParserFuzz/main.swift" "$out/frame-parser-fuzz" BeaconCore

# Seed corpus from the hex list (spaces inside a line are ignored).
n=0
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  n=$((n + 1))
  printf '%s' "${line// /}" | xxd -r -p >"$out/corpus/seed-$n"
done <"$root/Fuzz/FrameParserFuzz/seeds.hex"

# -max_len 300: past the 255-byte limit, so over-long input is exercised too.
args=(-max_total_time="$seconds" -max_len=300 -print_final_stats=1 -artifact_prefix="$out/artifacts/")
# FUZZ_RUNS=N stops after N executions instead (the long runs: SECONDS is then a time limit).
if [ -n "${FUZZ_RUNS:-}" ]; then args+=(-runs="$FUZZ_RUNS"); fi
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
  # Job mode writes fuzz-N.log into the working directory: run it from $out.
  cd "$out"
  args+=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
fi
exec "$out/frame-parser-fuzz" "${args[@]}" "$out/corpus"
