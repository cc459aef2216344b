#!/usr/bin/env bash
# Fuzzes the pure HCI parsers with libFuzzer (swiftlang docs/libFuzzerIntegration.md).
#
#   Fuzz/run-hci.sh TARGET SECONDS      TARGET: hci-events | btsnoop | dbus-wire | scenario |
#                                               keyfile | gzone-payload | trip-events |
#                                               device-update | bridge-methods | eid-frames |
#                                               gatt-replies
#
# Builds the parser's module (HCIParsing; for dbus-wire the in-place D-Bus wire reader,
# Sources/DBus/Wire.swift with its strings, reader and messages and the pure files it needs, as
# the module DBus; for scenario, keyfile
# and gzone-payload the scenario reader, the configuration keyfile parser and the G-Zone payload
# loader, as BeaconCore, GZone and BridgeDaemon's configuration files; for device-update the
# Device1 PropertiesChanged decoder and the one Device1 property reader, as the BlueZ files they
# and the generic path need, over the wire reader and BeaconCore; for bridge-methods the checks on the arguments of the daemon's
# D-Bus methods, BridgeRequest.parse, as BridgeDaemon's request parser and configuration files
# over the wire reader's DBus; for eid-frames the Eddystone-EID and encrypted TLM frame readers,
# as BeaconCrypto over Debian's nettle; for gatt-replies the EID provisioner's readers of the
# Eddystone Configuration Service's replies and its state machine, as EIDProvisioning over
# BeaconCrypto and nettle's libhogweed) from Sources/ unchanged
# (Fuzz/build-module.sh), links Fuzz/TARGET/FuzzEntry.swift against it (swiftc
# -sanitize=fuzzer,address; swiftlang docs/libFuzzerIntegration.md), then runs it for SECONDS on
# a working corpus seeded from Fuzz/TARGET/corpus. A crash leaves its input in
# .build/fuzz/TARGET/artifacts and exits non-zero; copy it into Fuzz/TARGET/corpus (and a test)
# as a regression input. Prints the executions and whether anything crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
. Fuzz/build-module.sh

target=${1:?usage: Fuzz/run-hci.sh hci-events|btsnoop|dbus-wire|scenario|keyfile|gzone-payload|trip-events|device-update|bridge-methods|eid-frames|gatt-replies SECONDS}
seconds=${2:-30}
out=.build/fuzz/$target
# The modules, shared by the targets: each is rebuilt only when its sources change. DBus and
# BridgeDaemon are the parts of those modules the harnesses need, under their real names.
modules=.build/fuzz/modules
mkdir -p "$out/corpus" "$out/artifacts"
# Message.swift asks libdbus whether a signature is valid; the harness links no libdbus, so
# Fuzz/dbus-wire/Signature.swift stands in for it in the module.
dbus_wire() {
  fuzz_module "$modules" DBus "" \
    Sources/DBus/{Wire,WireString,WireReader,WireMessage,WireValue,WireWriter,DBusValue,Names,DBusError,CString,EventCount}.swift \
    Fuzz/dbus-wire/Signature.swift
}
# One BridgeDaemon for keyfile and bridge-methods, so that running one after the other builds it
# once: the configuration reader, and the D-Bus request parser with the names and key checks it
# uses. Called from build, whose source lists it reads.
bridge_daemon() {
  dbus_wire && fuzz_module "$modules" BeaconCore "" $beaconCore &&
    fuzz_module "$modules" GZone BeaconCore $gzone &&
    fuzz_module "$modules" BeaconCrypto "" Sources/BeaconCrypto/*.swift &&
    fuzz_module "$modules" BridgeDaemon "BeaconCore GZone BeaconCrypto DBus" \
      $(find Sources/BridgeDaemon/Configuration -name '*.swift' | sort) \
      Sources/BridgeDaemon/GZone/GZoneConfiguration.swift \
      Sources/BridgeDaemon/Authentication/PairingKeyFile.swift \
      Sources/BridgeDaemon/Service/{BridgeRequest,BridgeServiceNames}.swift
}
build() {
  local beaconCore gzone
  beaconCore=$(find Sources/BeaconCore -name '*.swift' | sort)
  gzone=$(find Sources/GZone -name '*.swift' | sort)
  case "$target" in
    hci-events | btsnoop) fuzz_module "$modules" HCIParsing "" Sources/HCIParsing/*.swift &&
      fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" HCIParsing ;;
    dbus-wire) dbus_wire && fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" DBus ;;
    device-update) dbus_wire && fuzz_module "$modules" BeaconCore "" $beaconCore &&
      fuzz_module "$modules" BlueZ "BeaconCore DBus" \
        Sources/BlueZ/{DeviceUpdate,DevicePropertyReader,DeviceChanges,DeviceEntries,DeviceRecord,DeviceAdvertisement,ObjectTree,BlueZNames}.swift &&
      fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" DBus BeaconCore BlueZ ;;
    scenario | trip-events) fuzz_module "$modules" BeaconCore "" $beaconCore &&
      fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" BeaconCore ;;
    gzone-payload) fuzz_module "$modules" BeaconCore "" $beaconCore &&
      fuzz_module "$modules" GZone BeaconCore $gzone &&
      fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" BeaconCore GZone ;;
    eid-frames) fuzz_module "$modules" BeaconCrypto "" Sources/BeaconCrypto/*.swift &&
      fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" BeaconCrypto ;;
    gatt-replies) fuzz_module "$modules" BeaconCrypto "" Sources/BeaconCrypto/*.swift &&
      fuzz_module "$modules" EIDProvisioning BeaconCrypto Sources/EIDProvisioning/*.swift &&
      fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" BeaconCrypto EIDProvisioning ;;
    keyfile | bridge-methods) bridge_daemon &&
      fuzz_link "$modules" "Fuzz/$target/FuzzEntry.swift" "$out/fuzz" DBus BeaconCore GZone BeaconCrypto BridgeDaemon ;;
  esac
}
case "$target" in
  hci-events | btsnoop | dbus-wire | scenario | gzone-payload | keyfile | trip-events | device-update | \
    bridge-methods | eid-frames | gatt-replies) ;;
  *) echo "run-hci.sh: unknown target $target" >&2; exit 64 ;;
esac
cp -n Fuzz/"$target"/corpus/* "$out/corpus/" 2>/dev/null || true

# Keep the build log quiet unless it fails.
if ! (build) >"$out/build.log" 2>&1; then
  cat "$out/build.log" >&2
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
