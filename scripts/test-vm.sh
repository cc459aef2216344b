#!/usr/bin/env bash
# `make test-vm`: the real Linux Bluetooth stack in a VM (docs/DESIGN.md, Tests, tier 4).
#
# Boots one VM (virtme-ng over qemu under TCG, Debian's kernel, the host's root read-only),
# runs Tests/VM/guest.sh in it (hci_vhci, dbus-daemon, btvirt, bluetoothd, btmgmt add-adv
# iBeacons, beaconbridge scan/replay), then asserts on beaconbridge's outputs with
# Tests/VM/check.py. Guest logs stay in .build/vm-out.
#
# BEACONBRIDGE_SKIP_VM=1 skips the tier, loudly, on a machine that cannot run a VM at all. CI
# never sets it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/.build/debug/beaconbridge
VENV=$ROOT/.build/vm-venv
OUT=$ROOT/.build/vm-out
VIRTME_NG_VERSION=1.42

if [ "${BEACONBRIDGE_SKIP_VM:-}" = 1 ]; then
  cat >&2 <<'WARN'
********************************************************************************
* WARNING: BEACONBRIDGE_SKIP_VM=1: the VM tier did NOT run.                    *
* Nothing was tested against the real kernel, bluetoothd or the HCI socket.   *
* Only for machines that cannot run a VM at all; CI must never set it.        *
********************************************************************************
WARN
  # `make test` reads this and does not report the run as passed.
  mkdir -p .build && echo vm >.build/skipped-vm
  exit 0
fi
rm -f .build/skipped-vm

started=$(date +%s)
cannot_run() {
  echo "test-vm: FAIL: the VM tier cannot run: $1" >&2
  echo "test-vm: $2" >&2
  echo "test-vm: (on a machine that cannot run a VM at all, BEACONBRIDGE_SKIP_VM=1 skips this tier; see README)" >&2
  exit 1
}

scripts/install-deps.sh vm
if [ ! -x "$VENV/bin/vng" ]; then
  echo "test-vm: installing virtme-ng $VIRTME_NG_VERSION into $VENV" >&2
  /usr/bin/python3 -m venv "$VENV" || cannot_run "no Python venv" "apt-get install python3-venv"
  "$VENV/bin/pip" install -q "virtme-ng==$VIRTME_NG_VERSION" ||
    cannot_run "pip could not install virtme-ng" "check network access to PyPI, then: $VENV/bin/pip install virtme-ng==$VIRTME_NG_VERSION"
fi

command -v qemu-system-x86_64 >/dev/null || cannot_run "qemu-system-x86_64 is missing" "apt-get install qemu-system-x86"
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$kernel" ] || cannot_run "no kernel image in /boot" "apt-get install linux-image-amd64"
version=${kernel#/boot/vmlinuz-}
[ -n "$(find "/lib/modules/$version" -name 'hci_vhci.ko*' 2>/dev/null | head -n 1)" ] ||
  cannot_run "the modules of kernel $version (hci_vhci) are missing" "apt-get install --reinstall linux-image-$version"
available=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
[ "$available" -ge 1400 ] ||
  cannot_run "only ${available} MB of memory available; the VM needs 1 GB plus qemu's own" "free memory, or run on a larger machine"
for tool in btvirt bluetoothd btmgmt btmon dbus-daemon; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || [ -x "/usr/libexec/bluetooth/$tool" ] ||
    cannot_run "$tool is missing" "apt-get install bluez bluez-test-tools dbus-daemon"
done
[ -x "$BIN" ] || cannot_run "$BIN is not built" "make build"

rm -rf "$OUT"
mkdir -p "$OUT"
echo "test-vm: booting $kernel under TCG (about a minute), then the scenarios; logs in $OUT" >&2
status=0
PATH="$VENV/bin:$PATH" timeout 660 vng --run "$kernel" --disable-kvm --force-9p -m 1G \
  --rwdir "$OUT" --exec "$ROOT/Tests/VM/guest.sh $OUT $BIN" >"$OUT/vng.log" 2>&1 </dev/null || status=$?
[ "$status" -eq 0 ] || echo "test-vm: vng exited with status $status (124: the 660 s limit); see $OUT/vng.log" >&2
if [ ! -s "$OUT/steps.txt" ]; then
  echo "test-vm: FAIL: the VM did not start or did not run the guest script. The end of $OUT/vng.log:" >&2
  tail -n 30 "$OUT/vng.log" >&2
fi

check=0
/usr/bin/python3 "$ROOT/Tests/VM/check.py" "$OUT" "$BIN" || check=$?
echo "test-vm: wall time $(($(date +%s) - started)) s"
exit "$check"
