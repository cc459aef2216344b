#!/usr/bin/env bash
# Fuzzes the pure HCI parsers with libFuzzer (swiftlang docs/libFuzzerIntegration.md).
#
#   Fuzz/run-hci.sh TARGET SECONDS      TARGET: hci-events | btsnoop | dbus-wire | scenario |
#                                               keyfile | gzone-payload | device-update
#
# Builds the parser's sources (Sources/HCIParsing/*.swift; for dbus-wire the in-place D-Bus wire
# reader, Sources/DBus/Wire.swift and the pure files it needs; for scenario, keyfile and
# gzone-payload the scenario reader, the configuration keyfile parser and the G-Zone payload
# loader with the modules they need; for device-update the Device1 PropertiesChanged reader with
# the wire reader, the generic path's BlueZ files and BeaconCore) with Fuzz/TARGET/FuzzEntry.swift
# into one executable
# (swiftc -sanitize=fuzzer,address -parse-as-library), then runs it for SECONDS on a working
# corpus seeded from Fuzz/TARGET/corpus. A crash leaves its input in .build/fuzz/TARGET/artifacts
# and exits non-zero; copy it into Fuzz/TARGET/corpus (and a test) as a regression input.
# Prints the executions and whether anything crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:?usage: Fuzz/run-hci.sh hci-events|btsnoop|dbus-wire|scenario|keyfile|gzone-payload|device-update SECONDS}
seconds=${2:-30}
out=.build/fuzz/$target
# The input parsers of issue 14 span modules (BeaconCore, GZone, BridgeDaemon's configuration
# files): their sources are copied into one module with the imports between them removed, so
# the harness builds without SwiftPM, and without BridgeDaemon's C libraries.
flatten() {
  rm -rf "$out/src" && mkdir -p "$out/src"
  local f
  for f in "$@"; do cp "$f" "$out/src/$(echo "$f" | tr / _)"; done
  sed -i -E '/^import (BeaconCore|GZone|DBus)$/d' "$out"/src/*.swift
  sources=("$out"/src/*.swift)
}
mkdir -p "$out/corpus" "$out/artifacts"
case "$target" in
  hci-events | btsnoop) sources=(Sources/HCIParsing/*.swift) ;;
  dbus-wire) sources=(Sources/DBus/Wire.swift Sources/DBus/WireValue.swift Sources/DBus/DBusValue.swift Sources/DBus/Names.swift Sources/DBus/DBusError.swift Sources/DBus/CString.swift) ;;
  device-update)
    flatten $(find Sources/BeaconCore -name '*.swift') \
      Sources/DBus/{Wire,WireValue,DBusValue,Names,DBusError,CString,EventCount}.swift \
      Sources/BlueZ/{DeviceUpdate,DeviceEntries,DeviceRecord,DeviceAdvertisement,ObjectTree,BlueZNames}.swift ;;
  scenario) flatten $(find Sources/BeaconCore -name '*.swift') ;;
  gzone-payload) flatten $(find Sources/BeaconCore Sources/GZone -name '*.swift') ;;
  keyfile)
    flatten $(find Sources/BeaconCore Sources/GZone Sources/BridgeDaemon/Configuration -name '*.swift') \
      Sources/BridgeDaemon/GZone/GZoneConfiguration.swift ;;
  *) echo "run-hci.sh: unknown target $target" >&2; exit 64 ;;
esac
cp -n Fuzz/"$target"/corpus/* "$out/corpus/" 2>/dev/null || true

# ld.gold warns about every ASan helper symbol; keep the build log quiet unless it fails.
if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name "HCIFuzz" -package-name beaconbridge \
  "${sources[@]}" "Fuzz/$target/FuzzEntry.swift" -o "$out/fuzz" >"$out/build.log" 2>&1; then
  grep -v "Cannot export local symbol" "$out/build.log" >&2
  echo "fuzz $target: the harness did not build" >&2
  exit 1
fi

log="$out/last-run.log"
set +e
# FUZZ_RUNS=N stops after N executions instead (the long runs: SECONDS is then a time limit).
limits=(-max_total_time="$seconds")
if [ -n "${FUZZ_RUNS:-}" ]; then limits+=(-runs="$FUZZ_RUNS"); fi
"$out/fuzz" "${limits[@]}" -print_final_stats=1 -max_len=4096 \
  -artifact_prefix="$out/artifacts/" "$out/corpus" >"$log" 2>&1
status=$?
set -e
runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
if [ $status -ne 0 ]; then
  tail -40 "$log" >&2
  echo "fuzz $target: CRASHED after $runs executions; inputs in $out/artifacts" >&2
  exit 1
fi
echo "fuzz $target: $runs executions (limit ${seconds} s), no crash (corpus: $(ls "$out/corpus" | wc -l) inputs)"
