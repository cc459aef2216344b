#!/usr/bin/env bash
# The arm64 tier (make test-arm64, docs/arm64.md): what `make deb-arm64` built, run under
# qemu-aarch64 on this amd64 machine.
#
#   scripts/test-arm64.sh DEB HOST_BIN          (make test-arm64, first)
#   1. `beaconbridge demo` from the .deb's own files prints what the amd64 HOST_BIN prints;
#   2. every CLI golden output (Tests/Golden/cli: simulate on each scenario, replay) byte for
#      byte, from the .deb's beaconbridge (scripts/check-golden.py --runner);
#   3. the .deb's daemon as on a box (scripts/arm64-box.py): started by its CLI's `run`, on a
#      private bus with dbusmock's BlueZ, it answers status and doctor, tags a trip and uploads
#      its batch to Tests/Support/fake_backend.py.
#
#   scripts/test-arm64.sh --unit                (make test-arm64, then; alone: make test-arm64-unit)
#   4. the unit tier (every suite not tagged .process), cross-built and run under qemu, one test
#      at a time (--no-parallel, below).
#
#   scripts/test-arm64.sh --process             (make test-arm64-process, not in make test)
#   5. the process tier (the suites tagged .process) the same way: the daemon and the CLI as
#      processes, under qemu, beside the host's dbus-daemon, Mosquitto and Python.
#
# Nothing is skipped: without qemu-aarch64 or the arm64 tree, or with a test that did not run, it
# fails. binfmt_misc is never used: each arm64 program is started as `qemu-aarch64 -L TREE PROG`,
# and where a test starts the project's own executables (REPO/.build/debug/beaconbridge and
# beaconbridged, found by #filePath), a private mount namespace puts small host scripts there
# that start the arm64 ones under qemu. Logs in .build/arm64-out.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
usage="usage: scripts/test-arm64.sh DEB HOST_BIN | --unit | --process"
unit=false
tier=unit
case "${1:-}" in
--unit) unit=true ;;
--process) unit=true tier=process ;;
esac
out=.build/arm64-out
fail() {
  echo "test-arm64: $*" >&2
  exit 1
}

eval "$(scripts/arm64.sh env)"
[ -x "$QEMU" ] || fail "no qemu-aarch64 at $QEMU"
[ -x "$TREE/lib/ld-linux-aarch64.so.1" ] || fail "no arm64 tree at $TREE"
start=$SECONDS
if ! $unit; then
  deb=${1:?$usage}
  host_bin=${2:?$usage}
  [ -f "$deb" ] || fail "no $deb: run make deb-arm64"
  [ -x "$host_bin" ] || fail "no $host_bin: run make build"
  rm -rf "$out/deb"
  mkdir -p "$out"

  # 1. The demo, from the package's files.
  dpkg-deb -x "$deb" "$out/deb"
  bin="$out/deb/usr/bin/beaconbridge"
  readelf -h "$bin" | grep -q 'Machine:.*AArch64' || fail "$bin is not an aarch64 program"
  "$QEMU" -L "$TREE" "$bin" demo >"$out/demo-arm64.txt" || fail "demo under qemu-aarch64 failed"
  "$host_bin" demo >"$out/demo-amd64.txt"
  if ! cmp -s "$out/demo-amd64.txt" "$out/demo-arm64.txt"; then
    diff -u "$out/demo-amd64.txt" "$out/demo-arm64.txt" >&2 || true
    fail "the arm64 demo printed something else than the amd64 one (above)"
fi
grep -q "none lost" "$out/demo-arm64.txt" || fail "the arm64 demo did not end with 'none lost'"
echo "test-arm64: demo: the same output on arm64 as on amd64 ($(tail -1 "$out/demo-arm64.txt"))"

# 2. The golden outputs, from the package's binary.
scripts/check-golden.py "$bin" --runner "$QEMU -L $TREE"

# 3. The daemon as on a box.
scripts/arm64-box.py --root "$out/deb" --qemu "$QEMU" --tree "$TREE" --out "$out"
echo "test-arm64: passed in $((SECONDS - start)) s"
exit 0
fi

# 4. and 5. The unit or the process tier. -disable-cross-import-overlays: sid's swiftlang has Testing's Foundation
# overlay module but not its library (lib_Testing_Foundation.so), and no test needs it.
scripts/arm64.sh swift build -Xswiftc -warnings-as-errors --build-tests \
  -Xswiftc -Xfrontend -Xswiftc -disable-cross-import-overlays
products="$BUILD/aarch64-unknown-linux-gnu/debug"
runner="$products/beaconbridgePackageTests.xctest"
[ -x "$runner" ] || fail "no test runner at $runner"
# wrapper PATH PROGRAM: a host script at PATH that runs the arm64 PROGRAM under qemu.
wrapper() {
  printf '#!/bin/sh\n# %s under qemu-aarch64 (scripts/test-arm64.sh)\nexec "%s" -L "%s" "%s" "$@"\n' \
    "$(basename "$2")" "$QEMU" "$TREE" "$2" >"$1"
  chmod 0755 "$1"
}
# The CLI's `run` execs the beaconbridged beside its own file (DaemonExecutable): a copy of the
# CLI sits in a folder whose beaconbridged is the wrapper of the real one.
wrappers="$repo/$out/wrappers"
rm -rf "$wrappers" "$repo/$out/cli"
mkdir -p "$wrappers" "$repo/$out/cli"
cp "$products/beaconbridge" "$repo/$out/cli/beaconbridge"
wrapper "$repo/$out/cli/beaconbridged" "$products/beaconbridged"
wrapper "$wrappers/beaconbridge" "$repo/$out/cli/beaconbridge"
wrapper "$wrappers/beaconbridged" "$products/beaconbridged"
process=$(scripts/test-tiers.sh process)
mkdir -p .build/debug
# What the tier is: every test the runner lists, less the process tier's suites (or only them).
# The run must count as many, so that no test is left out or counted that did not run.
"$QEMU" -L "$TREE" "$runner" --testing-library swift-testing --list-tests >"$out/unit-list.txt" 2>"$out/unit-list.err" ||
  fail "the test runner under qemu-aarch64 could not list its tests: $out/unit-list.err"
if [ "$tier" = unit ]; then
  listed=$(grep -cvE "$process" "$out/unit-list.txt" || true)
  which=(--skip "$process")
  outside="outside the process tier"
else
  listed=$(grep -cE "$process" "$out/unit-list.txt" || true)
  which=(--filter "$process")
  outside="in the process tier"
fi
[ "$listed" -gt 0 ] || fail "the test runner lists no test of the $tier tier: $out/unit-list.txt"
log="$out/$tier.log"
# --no-parallel: one test at a time. Swift Testing (sid's 6.2.3, without a parallel width option)
# otherwise starts every test of the run at once, and each test's jobs queue behind all the others'
# on the pool's two threads: under emulation no test ends before the whole run's work is done
# (216 tests of BeaconCoreTests all ended after 586 to 616 s), so a test's 60 s hang guard runs
# out while it waits its turn. One at a time, the same tests pass in the same time (615 s; docs/arm64.md).
# The test runner, and the CLI it runs, spawn an HTTP transfer's child from the beaconbridged
# beside them, an arm64 file the host cannot exec: BEACONBRIDGE_TRANSFER_EXECUTABLE names the
# wrapper instead (HTTPTransfers.executable).
set +e
unshare --mount --propagation private -- sh -c '
  mount --bind "$1" "$2" && shift 2 && exec "$@"' unshare "$wrappers" "$repo/.build/debug" \
  env BEACONBRIDGE_TRANSFER_EXECUTABLE="$wrappers/beaconbridged" \
  "$QEMU" -L "$TREE" "$runner" --testing-library swift-testing --no-parallel "${which[@]}" \
  >"$log" 2>&1
status=$?
set -e
summary=$(grep -E 'Test run with [0-9]+ tests? in [0-9]+ suites? (passed|failed)' "$log" | tail -1 || true)
grep -E '✘|failed' "$log" | tail -40 >&2 || true
[ -n "$summary" ] || fail "the $tier tier under qemu-aarch64 printed no summary (exit $status): $log"
echo "test-arm64: $tier tier under qemu-aarch64: $summary"
[ "$status" = 0 ] && [[ "$summary" == *passed* ]] || fail "the $tier tier failed under qemu-aarch64 (exit $status): $log"
ran=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<<"$summary")
[ "$ran" = "$listed" ] ||
  fail "the $tier tier ran $ran tests, but the runner lists $listed $outside ($out/unit-list.txt)"
echo "test-arm64: all $listed tests the runner lists $outside ran and passed"
echo "test-arm64: the $tier tier passed in $((SECONDS - start)) s"
