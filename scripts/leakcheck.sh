#!/usr/bin/env bash
# Leak check for the D-Bus and BlueZ layers: builds the tests with AddressSanitizer (whose
# LeakSanitizer runs at exit), runs DBusTests and BlueZTests against real dbus-daemons, and fails
# on any leak whose allocation stack goes through libdbus-1 or our DBus / BlueZ modules.
#
# Why not valgrind: valgrind 3.19 (Debian 12) dies with SIGSEGV inside libdispatch's
# _dispatch_sigsuspend as soon as a Swift async main starts, so it cannot run Swift Testing.
#
# Leaks elsewhere are printed but tolerated: swift-corelibs-foundation's Process leaks its own
# objects (seen from DBusTestSupport's PrivateBus.start).
#
# Usage: scripts/leakcheck.sh [--selftest]
#   --selftest  sets BEACONBRIDGE_LEAK_CANARY=1 so one test leaks a DBusMessage on purpose; the
#               script must then FAIL. Exit 0 means the canary was caught.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=.build-asan
# The in-process suites: the ones that run our D-Bus and BlueZ code in this binary. Tests that
# spawn the beaconbridge executable measure nothing here and only slow down under ASan.
filter='DBusTests|BlueZSourceTests|ObjectTreeTests|PassiveMonitorTests|ResilienceTests|BoundedMemoryTests'
selftest=0
if [[ "${1:-}" == "--selftest" ]]; then selftest=1; fi

swift build --build-tests -Xswiftc -sanitize=address --scratch-path "$scratch" >/dev/null
binary="$scratch/debug/beaconbridgePackageTests.xctest"
log=$(mktemp /tmp/leakcheck.XXXXXX.log)

set +e
BEACONBRIDGE_LEAK_CANARY=$selftest \
  ASAN_OPTIONS=detect_leaks=1:exitcode=0 LSAN_OPTIONS=fast_unwind_on_malloc=0 \
  "$binary" --testing-library swift-testing --filter "$filter" >"$log" 2>&1
status=$?
set -e

tests_ok=1
if [[ $status -ne 0 ]] || ! grep -q "Test run with .* passed" "$log"; then tests_ok=0; fi

# One leak record = from "Direct/Indirect leak" to the blank line after it.
ours=$(awk '
  /^(Direct|Indirect) leak/ { rec = $0 "\n"; inrec = 1; next }
  inrec && /^$/ { if (rec ~ /libdbus-1\.so|\$s4DBus|\$s5BlueZ/) { printf "%s\n", rec }; inrec = 0; next }
  inrec { rec = rec $0 "\n" }
' "$log")
total=$(grep -cE '^(Direct|Indirect) leak' "$log" || true)
summary=$(grep -E '^SUMMARY: AddressSanitizer' "$log" || echo "no leaks reported")
ours_count=$(printf '%s' "$ours" | grep -cE '^(Direct|Indirect) leak' || true)

echo "leakcheck: tests $( ((tests_ok)) && echo passed || echo FAILED ); $summary"
echo "leakcheck: $total leak records in all, $ours_count through libdbus-1 or the DBus/BlueZ modules"
echo "leakcheck: full log in $log"

if ((selftest)); then
  if ((ours_count > 0)); then echo "leakcheck selftest: the canary DBusMessage leak was caught"; exit 0; fi
  echo "leakcheck selftest: FAILED to catch the canary leak"; exit 1
fi
if ((ours_count > 0)); then printf '%s\n' "$ours"; exit 1; fi
((tests_ok)) || { echo "leakcheck: tests failed under ASan"; exit 1; }
exit 0
