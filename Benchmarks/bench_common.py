"""What the benchmark scripts share: the callgrind runner, the private D-Bus bus and the C emitter
that feed the D-Bus path, and the two D-Bus paths counted under callgrind (beaconbridge's
DBusPathBench and bleak's consumer).

Imported by run.py (`make bench`), instructions.py (`make bench-check`) and scaling.py
(`make bench-scaling`), and for its bus by scripts/arm64-box.py; it imports none of them.
Standard library only.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

# Swift's hashing made deterministic, so that the same binary executes the same instructions for
# the same input from run to run.
ENV = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1")

BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <limit name="max_incoming_bytes">1000000000</limit>
  <limit name="max_outgoing_bytes">1000000000</limit>
  <limit name="max_message_size">100000000</limit>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <allow user="*"/>
  </policy>
</busconfig>
"""


def log(*args):
    print("bench:", *args, file=sys.stderr, flush=True)


# --- callgrind ------------------------------------------------------------------------------


def total(path):
    """The instruction total a callgrind output file records."""
    with open(path) as f:
        for line in f:
            match = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if match:
                return int(match.group(1))
    raise SystemExit(f"bench: no total in {path}")


def callgrind(out, toggle=None):
    """The valgrind command line that counts a program's instructions into `out`: every
    instruction, or (toggle) only those inside functions whose name contains `toggle`."""
    collect = [f"--toggle-collect=*{toggle}*"] if toggle else []
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *collect]


def count(command, out, toggle=None):
    """Runs `command` under callgrind to its end: (instructions, its stdout stripped). A failure
    stops the benchmark with the end of the command's stderr."""
    result = subprocess.run(callgrind(out, toggle) + command, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"bench: {' '.join(command)} failed under callgrind:\n{result.stderr[-2000:]}")
    return total(out), result.stdout.strip()


# --- /proc ----------------------------------------------------------------------------------


def cpu_seconds(pid):
    """CPU seconds (user + system) of every live thread of pid, from schedstat (ns)."""
    seconds = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                seconds += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return seconds / 1e9


def quiesce(pids, settle=0.5, threshold=0.003, limit=120):
    """Waits until none of pids uses more than threshold CPU seconds over settle seconds."""
    deadline = time.monotonic() + limit
    last = {p: cpu_seconds(p) for p in pids}
    while time.monotonic() < deadline:
        time.sleep(settle)
        now = {p: cpu_seconds(p) for p in pids}
        if all(now[p] - last[p] < threshold for p in pids):
            return
        last = now
    log("warning: consumers still busy after", limit, "s")


# --- bus, emitter ---------------------------------------------------------------------------


class Bus:
    def __init__(self, directory):
        conf = os.path.join(directory, "bus.conf")
        with open(conf, "w") as f:
            f.write(BUS_CONF.format(socket=os.path.join(directory, "bus")))
        self.process = subprocess.Popen(
            ["dbus-daemon", f"--config-file={conf}", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.process.stdout.readline().strip()
        if not self.address:
            raise SystemExit("bench: dbus-daemon printed no address")

    def stop(self):
        self.process.terminate()
        self.process.wait()


class Emitter:
    def __init__(self, binary, bus, devices):
        self.process = subprocess.Popen(
            [binary, bus.address, str(devices)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "ready", "emitter did not start"

    def send(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def reply(self):
        line = self.process.stdout.readline().strip()
        if not line or line.startswith("error"):
            raise SystemExit(f"bench: emitter: {line or 'exited'}")
        return line

    def __call__(self, command):
        self.send(command)
        return self.reply()

    def stop(self):
        try:
            self.send("quit")
        except BrokenPipeError:
            pass
        self.process.wait(timeout=10)


# --- the D-Bus path under callgrind, both peers ---------------------------------------------


def dbus_path(harness, emitter, n, rate, work):
    """Instructions of DBusPathBench (every thread) taking in n advertisements from the emitter."""
    directory = tempfile.mkdtemp(dir=work, prefix=f"dbus-{n}-")
    bus = Bus(directory)
    source = Emitter(emitter, bus, 200)
    out = os.path.join(directory, "harness.cg")
    harness_process = subprocess.Popen(
        callgrind(out) + [harness, bus.address, str(n)],
        env=ENV, stdout=subprocess.PIPE, stderr=open(os.path.join(directory, "harness.log"), "w"), text=True)
    try:
        line = harness_process.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"bench: DBusPathBench did not start ({line!r}); see {directory}/harness.log")
        # More than n: the harness stops at n sightings, whatever is still queued.
        source.send(f"stream 200 {rate} {n + 400}")
        line = harness_process.stdout.readline().strip()
        if line != f"done {n}":
            raise SystemExit(f"bench: DBusPathBench: {line!r}; see {directory}/harness.log")
        harness_process.wait(timeout=300)
        source.reply()
    finally:
        if harness_process.poll() is None:
            harness_process.kill()
            harness_process.wait()
        source.stop()
        bus.stop()
    return total(out)


def bleak_path(python, script, emitter, n, rate, work):
    """Instructions of bleak's consumer (Benchmarks/bleak_consumer.py: BleakScanner, the callback
    reading the iBeacon identity) taking in n advertisements, under callgrind like the D-Bus
    path. The interpreter runs under valgrind, so its start-up is counted too; the slope between
    two lengths removes it. PYTHONHASHSEED=0 keeps the count repeatable."""
    directory = tempfile.mkdtemp(dir=work, prefix=f"bleak-{n}-")
    bus = Bus(directory)
    source = Emitter(emitter, bus, 200)
    out = os.path.join(directory, "bleak.cg")
    env = dict(ENV, DBUS_SYSTEM_BUS_ADDRESS=bus.address, PYTHONHASHSEED="0")
    consumer = subprocess.Popen(
        callgrind(out) + [python, script],
        env=env, stdout=subprocess.PIPE, stderr=open(os.path.join(directory, "bleak.log"), "w"), text=True)
    try:
        line = consumer.stdout.readline().strip()
        if line != "scanning":
            raise SystemExit(f"bench: bleak did not start ({line!r}); see {directory}/bleak.log")
        source("starts 1")
        source.send(f"stream 200 {rate} {n}")
        source.reply()
        quiesce([consumer.pid, bus.process.pid], limit=600)
        consumer.send_signal(signal.SIGTERM)
        result = json.loads(consumer.communicate(timeout=300)[0].splitlines()[-1])
        if result["callbacks"] != n:
            raise SystemExit(f"bench: bleak saw {result['callbacks']} of {n} advertisements")
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
        source.stop()
        bus.stop()
    return total(out)
