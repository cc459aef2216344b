#!/usr/bin/python3
"""The arm64 package run as on a box, under qemu-aarch64 (make test-arm64, docs/arm64.md).

    scripts/arm64-box.py --root DIR --qemu QEMU --tree TREE --out DIR

DIR is the arm64 .deb unpacked (dpkg-deb -x). Only the project's programs are arm64; the rest is
the host's, as the daemon's tests use it: a private dbus-daemon as the system bus, python-dbusmock's
bluez5 template on it as bluetoothd, and Tests/Support/fake_backend.py as the upload backend.

1. `beaconbridge run`, the unit's ExecStart, from the package's usr/bin, execs the package's
   usr/lib/beaconbridge/beaconbridged (DaemonExecutable): it says READY=1 on a NOTIFY_SOCKET and
   starts a discovery on the mock's adapter hci0.
2. `beaconbridge status --json` and `beaconbridge doctor --json` (the package's CLI) answer through
   the bus.
3. A beacon is paired through the daemon's API, advertised by the mock, and becomes the active one;
   a trip is tagged over D-Bus (`beaconbridge trip start`, `trip events`, `trip end`), and its
   batch reaches the backend with the beacon's device ID, the trip's key and its events.
4. SIGTERM stops the daemon with exit status 0.

There is no binfmt_misc: every arm64 program runs as `qemu-aarch64 -L TREE PROGRAM`. Where the
package's CLI execs the daemon, and where the daemon starts an HTTP transfer's child from its own
executable (under qemu /proc/self/exe is qemu: BEACONBRIDGE_TRANSFER_EXECUTABLE), a host script
starts the arm64 file under qemu. The package is laid out again in DIR/../box so that its
usr/lib/beaconbridge/beaconbridged is that script.

Every wait is bounded, with a bound scaled for qemu (QEMU_WAIT, below) and its use measured: each
fact (seconds, bytes) is printed and written to OUT/box-facts.txt, among them the daemon's resident
set (VmRSS of the emulated process: qemu's own memory and its translated code included) idle and
after the trip. Exits 1 naming the step that failed, with the daemon's log.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import dbus

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Benchmarks"))
from bench_common import Bus  # noqa: E402

# qemu's, not the daemon's: a program started under qemu-aarch64 spends seconds translating its
# code before it answers (a CLI call about 2 s, the daemon's first start more), on a shared machine
# more. Measured uses are in the facts (e.g. ready_seconds); this bounds each wait, it is never
# slept.
QEMU_WAIT = 120.0
UUID = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"
BEACON_ADDRESS = "C0:FF:EE:00:00:01"
# An iBeacon frame as BlueZ's ManufacturerData holds it (company 0x004C): UUID above, major 1,
# minor 7, measured power -59 (BlueZTestSupport's iBeaconBytes).
IBEACON = bytes.fromhex("0215" + UUID.replace("-", "") + "00010007c5")

facts = []


def fact(key, value):
    facts.append(f"{key} {value}")
    print(f"arm64-box: {key} {value}", flush=True)


class Failure(Exception):
    pass


def wait_until(what, condition, timeout=QEMU_WAIT, poll=0.2):
    """Polls condition until it is true; Failure naming what after timeout. Returns the seconds
    it took."""
    start = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise Failure(f"{what}: not within {timeout:.0f} s (QEMU_WAIT)")
        time.sleep(poll)


def wrapper(path, qemu, tree, program):
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\n# {os.path.basename(program)} under qemu-aarch64 (scripts/arm64-box.py)\n'
                f'exec "{qemu}" -L "{tree}" "{program}" "$@"\n')
    os.chmod(path, 0o755)


def vm_rss(pid):
    """VmRSS of pid in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise Failure(f"no VmRSS for PID {pid}")


def file_rss(pid, path):
    """The resident bytes of pid's mappings of the file at path (/proc/PID/smaps): under qemu, the
    guest's own executable, without qemu's heap and translated code."""
    total, inside = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                inside = len(fields) >= 6 and os.path.realpath(fields[5]) == os.path.realpath(path)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1]) * 1024
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="the arm64 .deb unpacked")
    ap.add_argument("--qemu", required=True)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    root, out = os.path.abspath(args.root), os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    cli_file = os.path.join(root, "usr/bin/beaconbridge")
    daemon_file = os.path.join(root, "usr/lib/beaconbridge/beaconbridged")
    for path in (cli_file, daemon_file):
        if not os.access(path, os.X_OK):
            raise Failure(f"no {path} in the unpacked package")
    fact("daemon_file_bytes", os.path.getsize(daemon_file))
    fact("cli_file_bytes", os.path.getsize(cli_file))

    work = tempfile.mkdtemp(prefix="arm64-box-")
    children = []
    daemon = None
    daemon_log = os.path.join(out, "box-daemon.log")
    try:
        # The package's layout, with the daemon as the script that runs it under qemu.
        box = os.path.join(work, "box")
        os.makedirs(box + "/usr/bin")
        os.makedirs(box + "/usr/lib/beaconbridge")
        shutil.copy2(cli_file, box + "/usr/bin/beaconbridge")
        wrapper(box + "/usr/lib/beaconbridge/beaconbridged", args.qemu, args.tree, daemon_file)
        cli_prefix = [args.qemu, "-L", args.tree, box + "/usr/bin/beaconbridge"]

        # The system bus: a private dbus-daemon, the benchmarks' (bench_common.Bus).
        bus_daemon = Bus(work)
        children.append(bus_daemon.process)
        address = bus_daemon.address
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
        for key in ("NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID"):
            env.pop(key, None)

        # bluetoothd: dbusmock's bluez5 template, with one adapter.
        mock_log = open(os.path.join(out, "box-dbusmock.log"), "w")
        children.append(subprocess.Popen(
            ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "bluez5"],
            env=env, stdout=subprocess.DEVNULL, stderr=mock_log))
        bus = dbus.bus.BusConnection(address)
        wait_until("dbusmock's bluez5 on the bus", lambda: bus.name_has_owner("org.bluez"), timeout=45)
        mock = dbus.Interface(bus.get_object("org.bluez", "/"), "org.bluez.Mock")
        mock.AddAdapter("hci0", "box hci0")
        adapter_mock = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/hci0"), "org.freedesktop.DBus.Mock")

        # The backend.
        uploads = os.path.join(out, "box-uploads.jsonl")
        if os.path.exists(uploads):
            os.remove(uploads)
        backend = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "../Tests/Support/fake_backend.py"),
             "--log", uploads, "--token", "SECRET"],
            stdout=subprocess.PIPE, text=True)
        children.append(backend)
        port_line = backend.stdout.readline().split()
        if len(port_line) != 2 or port_line[0] != "PORT":
            raise Failure(f"fake_backend.py printed {port_line} for its port")

        state = os.path.join(work, "state")
        os.makedirs(state)
        token = os.path.join(work, "token")
        with open(token, "w") as f:
            f.write("SECRET\n")
        # The daemon refuses a token file every user can read.
        os.chmod(token, 0o600)
        config = os.path.join(work, "beaconbridge.conf")
        with open(config, "w") as f:
            f.write(f"[General]\nbackend = bluez\nadapter = hci0\n"
                    f"[ActiveBeacon]\ndwellSightings = 1\ndwellSeconds = 0\n"
                    f"[Upload]\nURL = http://127.0.0.1:{port_line[1]}/trips\nTokenFile = {token}\n")

        # systemd's NOTIFY_SOCKET.
        notify_path = os.path.join(work, "notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.setblocking(False)
        notes = []

        def received():
            while True:
                try:
                    notes.append(notify.recv(4096).decode())
                except BlockingIOError:
                    return notes

        # 1. The unit's ExecStart.
        daemon_env = dict(env, NOTIFY_SOCKET=notify_path,
                          BEACONBRIDGE_TRANSFER_EXECUTABLE=box + "/usr/lib/beaconbridge/beaconbridged")
        started = time.monotonic()
        daemon = subprocess.Popen(cli_prefix + ["run", "--config", config, "--state-dir", state],
                                  env=daemon_env, stdout=subprocess.DEVNULL, stderr=open(daemon_log, "w"))

        def log():
            with open(daemon_log, errors="replace") as f:
                return f.read()

        def alive(what):
            if daemon.poll() is not None:
                raise Failure(f"{what}: the daemon exited with status {daemon.returncode}")

        def ready():
            alive("READY=1")
            return "READY=1" in received()
        fact("ready_seconds", f"{wait_until('READY=1 from the daemon', ready):.1f}")

        def scanning():
            alive("scanning")
            return any(n.startswith("STATUS=scanning (bluez") for n in received())
        wait_until("STATUS=scanning (bluez…)", scanning)
        fact("scanning_seconds", f"{time.monotonic() - started:.1f}")
        calls = [str(c[1]) for c in adapter_mock.GetCalls()]
        if "StartDiscovery" not in calls:
            raise Failure(f"the daemon scans, but called no StartDiscovery on hci0 ({calls})")
        with open(f"/proc/{daemon.pid}/cmdline", "rb") as f:
            command = f.read().split(b"\0")
        if not any(part.endswith(b"/usr/lib/beaconbridge/beaconbridged") for part in command):
            raise Failure(f"PID {daemon.pid} is not the package's beaconbridged: {command}")

        def cli(arguments, stdin="", expect=0):
            start = time.monotonic()
            result = subprocess.run(cli_prefix + arguments, env=env, input=stdin, capture_output=True,
                                    text=True, timeout=QEMU_WAIT)
            seconds = time.monotonic() - start
            if expect is not None and result.returncode != expect:
                raise Failure(f"beaconbridge {' '.join(arguments)}: exit {result.returncode}, not {expect}: "
                              f"{result.stdout}{result.stderr}")
            return result, seconds

        # 2. status and doctor through the bus.
        status, seconds = cli(["status", "--json"])
        fact("status_seconds", f"{seconds:.1f}")
        with open(os.path.join(out, "box-status.json"), "w") as f:
            f.write(status.stdout)
        if not str(json.loads(status.stdout).get("scanning", "")).startswith("bluez"):
            raise Failure(f"status --json does not say it scans with bluez: {status.stdout}")
        doctor, seconds = cli(["doctor", "--json", "--config", config, "--state-dir", state], expect=None)
        fact("doctor_seconds", f"{seconds:.1f}")
        fact("doctor_exit", doctor.returncode)
        with open(os.path.join(out, "box-doctor.json"), "w") as f:
            f.write(doctor.stdout)
        checks = {c.get("name"): c.get("status") for c in json.loads(doctor.stdout).get("checks", [])}
        for name in ("bluetoothd", "adapter"):
            if checks.get(name) != "ok":
                raise Failure(f"doctor's {name} check is {checks.get(name)}, not ok: {doctor.stdout}")
        # Before a beacon is paired and heard doctor warns of it (exit 1); nothing is critical.
        critical = [name for name, status in checks.items() if status == "critical"]
        if critical or doctor.returncode not in (0, 2):
            raise Failure(f"doctor exits {doctor.returncode}, {', '.join(critical)} critical: {doctor.stdout}")
        fact("idle_rss_bytes", vm_rss(daemon.pid))
        fact("idle_daemon_file_rss_bytes", file_rss(daemon.pid, daemon_file))

        # 3. A paired beacon, advertised, active; a trip tagged over D-Bus; its batch uploaded.
        cli(["pair", "--uuid", UUID, "--major", "1", "--minor", "7", "--device-id", "UNIT-0042"])
        device = mock.AddDevice("hci0", BEACON_ADDRESS, "beacon")
        device_mock = dbus.Interface(bus.get_object("org.bluez", device), "org.freedesktop.DBus.Mock")
        changed = dbus.Dictionary({
            "ManufacturerData": dbus.Dictionary({dbus.UInt16(0x004C): dbus.ByteArray(IBEACON)}, signature="qv"),
            "RSSI": dbus.Int16(-60)}, signature="sv")
        advertised = time.monotonic()

        def active():
            alive("the active beacon")
            if any("active: UNIT-0042" in n for n in received()):
                return True
            device_mock.EmitSignal("org.freedesktop.DBus.Properties", "PropertiesChanged", "sa{sv}as",
                                   ["org.bluez.Device1", changed, dbus.Array([], signature="s")])
            return False
        wait_until("STATUS=…active: UNIT-0042 after the beacon's advertisements", active, poll=0.5)
        fact("active_beacon_seconds", f"{time.monotonic() - advertised:.1f}")
        trip_started = time.monotonic()
        started_trip, _ = cli(["trip", "start", "--trip-id", "t1"])
        if json.loads(started_trip.stdout).get("deviceId") != "UNIT-0042":
            raise Failure(f"trip start did not tag UNIT-0042: {started_trip.stdout}")
        events = '[{"type":"braking","at":12.5,"g":0.41},{"type":"somethingNew","x":[1,2]}]'
        cli(["trip", "events", "--trip-id", "t1", "-"], stdin=events)

        def delivered():
            alive("the trip's upload")
            if not os.path.exists(uploads):
                return None
            with open(uploads) as f:
                for line in f:
                    record = json.loads(line)
                    if str(record.get("status")) == "200":
                        return record
            return None
        wait_until("the trip's batch at the backend", lambda: delivered() is not None)
        fact("trip_to_backend_seconds", f"{time.monotonic() - trip_started:.1f}")
        record = delivered()
        body = record["body"]
        if body.get("deviceId") != "UNIT-0042" or record.get("key") != "t1#0" or len(body.get("events", [])) != 2:
            raise Failure(f"the backend received something else than t1's batch for UNIT-0042: {record}")
        if record.get("auth") != "Bearer SECRET":
            raise Failure(f"the batch came without the token: {record.get('auth')}")
        if body["events"][0].get("g") != 0.41:
            raise Failure(f"the batch's first event changed on the way: {body['events'][0]}")
        cli(["trip", "end", "--trip-id", "t1"])
        fact("trip_rss_bytes", vm_rss(daemon.pid))
        fact("trip_daemon_file_rss_bytes", file_rss(daemon.pid, daemon_file))

        # 4. SIGTERM.
        stopping = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        try:
            code = daemon.wait(timeout=QEMU_WAIT)
        except subprocess.TimeoutExpired:
            raise Failure(f"the daemon did not stop within {QEMU_WAIT:.0f} s of SIGTERM")
        fact("stop_seconds", f"{time.monotonic() - stopping:.1f}")
        if code != 0:
            raise Failure(f"the daemon exited with status {code} on SIGTERM")
        daemon = None
        with open(os.path.join(out, "box-facts.txt"), "w") as f:
            f.write("\n".join(facts) + "\n")
        print("arm64-box: the package's daemon ran as on a box under qemu-aarch64: READY, scanning, "
              "status, doctor, a trip tagged and delivered, stopped", flush=True)
        return 0
    except (Failure, dbus.DBusException, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as error:
        print(f"arm64-box: FAILED: {error}", file=sys.stderr)
        if os.path.exists(daemon_log):
            with open(daemon_log, errors="replace") as f:
                print("arm64-box: the daemon's log:\n" + f.read()[-6000:], file=sys.stderr)
        return 1
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        for child in reversed(children):
            if child.poll() is None:
                child.kill()
                child.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
