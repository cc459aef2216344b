#!/usr/bin/env bash
# The suites of one test tier, as the regex that `swift test --filter`/`--skip` takes.
#
#   scripts/test-tiers.sh TAG        e.g. process
#
# A tier is a Swift Testing tag (Sources/BeaconTestSupport/Tiers.swift) on a suite:
# `@Suite(.tags(.process), …)`. `swift test` (Swift 6.3) filters by name only, not by tag, so this
# reads the tags from Tests/ and prints `^(Target\.Suite|…)(/|$)`: the Makefile runs the tier
# with --filter and the rest with --skip. Fails when no suite carries the tag, so that an empty
# filter never runs (or skips) everything.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:?usage: scripts/test-tiers.sh TAG}
suites=$(
  for file in Tests/*/*.swift; do
    target=$(basename "$(dirname "$file")")
    # The type declared after each tagged @Suite line (the attribute and the declaration may
    # share a line or follow each other).
    awk -v tag="$tag" -v target="$target" '
      /@Suite\(.*\.tags\(/ && $0 ~ "\\.tags\\([^)]*\\." tag "[,) ]" { pending = 1 }
      pending && match($0, /(struct|class|enum|actor) [A-Za-z_][A-Za-z0-9_]*/) {
        split(substr($0, RSTART, RLENGTH), words, " ")
        print target "\\." words[2]
        pending = 0
      }' "$file"
  done | sort -u | paste -sd '|'
)
if [ -z "$suites" ]; then
  echo "scripts/test-tiers.sh: no suite in Tests/ is tagged .$tag" >&2
  exit 1
fi
printf '^(%s)(/|$)\n' "$suites"
