#!/usr/bin/env python3
"""`make bench`: runs every benchmark side by side, prints one table, writes docs/PERFORMANCE.md.

docs/PERFORMANCE.md is a reference: what is measured and how, the current table, how to
reproduce it. Only the table between its markers is rewritten; a missing file is made from
REFERENCE below. Notes on what a run found go to a commit message (and what was tried, kept or
dropped, to PERFORMANCE.md's "What was tried"), so that it stays the current state.

Needs: a release-built beaconbridge and BeaconBench, the C emitter (Benchmarks/emitter.c), and a
venv with bleak. Uses only the standard library itself (run it with /usr/bin/python3).

CPU time is read from /proc: per-thread schedstat (nanoseconds on CPU, exact) summed over the
process's threads, so that other work on a shared machine does not count.
"""

import argparse
import datetime
import json
import os
import platform
import queue
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import Bus, Emitter, bleak_path, cpu_seconds, dbus_path, quiesce  # noqa: E402


def log(*args):
    print("bench:", *args, file=sys.stderr, flush=True)


# --- /proc ---------------------------------------------------------------------------------


def stat_cpu_seconds(pid):
    """utime + stime from /proc/PID/stat (includes exited threads; 10 ms resolution)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def switches(pid):
    """Context switches over every thread: roughly the wake-ups."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def switches_by_thread(pid):
    """Context switches per live thread."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                out[tid] = sum(int(line.split()[1]) for line in f
                               if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def memory(pid):
    """VmRSS and VmHWM in MB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(line.split()[1]) / 1024
    return out


class RSSPeak:
    """The highest VmRSS of pid, sampled every 50 ms while the `with` block runs."""

    def __init__(self, pid):
        self.pid = pid
        self.value = memory(pid)["VmRSS"]
        self.done = threading.Event()

    def _sample(self):
        while not self.done.wait(0.05):
            try:
                self.value = max(self.value, memory(self.pid)["VmRSS"])
            except (FileNotFoundError, ProcessLookupError):
                return

    def __enter__(self):
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.value = max(self.value, memory(self.pid)["VmRSS"])
        return False


class Sample:
    def __init__(self, pid):
        self.pid = pid
        self.cpu = cpu_seconds(pid)
        self.stat = stat_cpu_seconds(pid)
        self.switches = switches(pid)
        self.at = time.monotonic()

    def since(self, earlier):
        return {
            "cpu": self.cpu - earlier.cpu,
            "statCpu": self.stat - earlier.stat,
            "switches": self.switches - earlier.switches,
            "wall": self.at - earlier.at,
        }


def median_spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None, None
    return statistics.median(values), min(values), max(values)


# --- 2. the D-Bus path against bleak --------------------------------------------------------


def floor_count(floor):
    """The signals the floor program has framed so far (it answers SIGUSR1 with a JSON line)."""
    floor.send_signal(signal.SIGUSR1)
    return json.loads(floor.stdout.readline())["messages"]


def dbus_vs_bleak(args, work):
    runs = []
    for run in range(args.repeats):
        directory = tempfile.mkdtemp(dir=work, prefix=f"peers-{run}-")
        bus = Bus(directory)
        emitter = Emitter(args.emitter, bus, args.beacons)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address, BEACONBRIDGE_STATE_DIR=directory)
        env.pop("NOTIFY_SOCKET", None)
        bb_out = open(os.path.join(directory, "scan.jsonl"), "w")
        bb_err = open(os.path.join(directory, "scan.err"), "w")
        bb = subprocess.Popen(
            [args.beaconbridge, "scan", "--json", "--duration", "3600", "--state-dir", directory],
            env=env, stdout=bb_out, stderr=bb_err)
        floor = None
        if args.floor:
            # The C floor (Benchmarks/floor.c): the same socket read and framed, nothing else.
            floor = subprocess.Popen([args.floor, bus.address], env=env, stdout=subprocess.PIPE, text=True)
            if floor.stdout.readline().strip() != "ready":
                raise SystemExit("bench: the floor program did not start; see " + directory)
        peers = [bb.pid] + ([floor.pid] if floor else [])
        bl_out = os.path.join(directory, "bleak.out")
        bleak = subprocess.Popen(
            [args.python, args.bleak_script], env=env, stdout=open(bl_out, "w"),
            stderr=open(os.path.join(directory, "bleak.err"), "w"))
        emitter("starts 2")
        deadline = time.monotonic() + 60
        while "scanning" not in open(bl_out).read():
            if time.monotonic() > deadline or bleak.poll() is not None:
                raise SystemExit("bench: bleak did not start; see " + directory)
            time.sleep(0.1)
        quiesce(peers + [bleak.pid])
        result = {"run": run}
        sent_so_far = 0
        phases = [("steady", args.steady_rate, int(args.steady_rate * args.steady_seconds))]
        if args.slow_rate > 0:
            # A lower rate (500/s, a quarter): about the same wake-ups carry fewer advertisements,
            # so the two phases split the cost into a wake-up's and an advertisement's.
            phases.append(("slow", args.slow_rate, int(args.slow_rate * args.steady_seconds)))
        phases.append(("flat", 0, args.flat_total))
        for phase, rate, total in phases:
            measured = [("beaconbridge", bb.pid), ("bleak", bleak.pid)] + ([("floor", floor.pid)] if floor else [])
            before = {p: Sample(p) for _, p in measured}
            _, sent, seconds = emitter(f"stream {args.beacons} {rate} {total}").split()
            if rate:
                time.sleep(0.2)
            # dbus-daemon too: flat out it still holds messages for the consumers after the
            # emitter is done, and a consumer that batches can look idle meanwhile.
            quiesce(peers + [bleak.pid, bus.process.pid])
            sent_so_far += int(sent)
            if floor:
                # The floor uses so little CPU that it looks idle while it still reads: wait
                # until it has framed everything sent so far.
                deadline = time.monotonic() + 180
                while floor_count(floor) < sent_so_far and time.monotonic() < deadline:
                    time.sleep(0.5)
            after = {p: Sample(p) for _, p in measured}
            for name, pid in measured:
                d = after[pid].since(before[pid])
                result[f"{phase}.{name}.cpu100k"] = d["cpu"] / int(sent) * 1e5
                result[f"{phase}.{name}.statCpu100k"] = d["statCpu"] / int(sent) * 1e5
                result[f"{phase}.{name}.switches100k"] = d["switches"] / int(sent) * 1e5
                result[f"{phase}.{name}.core"] = d["cpu"] / float(seconds) * 100
            result[f"{phase}.rate"] = int(sent) / float(seconds)
            log(f"peers run {run} {phase}: {int(sent)} ads in {float(seconds):.2f} s;",
                {k: round(v, 4) for k, v in result.items() if k.startswith(phase)})
        if floor:
            floor.send_signal(signal.SIGTERM)
            result["floor.messages"] = json.loads(floor.communicate(timeout=30)[0].splitlines()[-1])["messages"]
        bb.send_signal(signal.SIGINT)
        bleak.send_signal(signal.SIGTERM)
        bb.wait(timeout=30)
        bleak.wait(timeout=30)
        seen = set()
        for line in open(os.path.join(directory, "scan.jsonl")):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if "Entered" in json.dumps(event):
                identity = json.dumps({k: v for k, v in event.items() if k in ("uuid", "major", "minor")}
                                      or event.get("beacon", event), sort_keys=True)
                seen.add(identity)
        bleak_result = json.loads(open(bl_out).read().splitlines()[-1])
        expected = sum(total for _, _, total in phases)
        result["beaconbridge.beacons"] = len(seen)
        result["bleak.beacons"] = bleak_result["beacons"]
        result["bleak.callbacks"] = bleak_result["callbacks"]
        result["expected"] = expected
        runs.append(result)
        emitter.stop()
        bus.stop()
    return runs


# --- instructions per advertisement, both peers (callgrind) ---------------------------------


def instructions_per_ad(args, work):
    """Instructions per advertisement under callgrind, each the slope between two stream lengths
    at 500/s: beaconbridge's D-Bus path (DBusPathBench: SignalSocket to the pipeline, as in
    `make bench-check`) and bleak's consumer (the interpreter and bleak, every thread). Repeatable
    where CPU seconds are not. Also whether the kernel gives `perf stat -e instructions`."""
    n1, n2 = args.instruction_lengths
    ours = [dbus_path(args.harness, args.emitter, n, 500, work) for n in (n1, n2)]
    bleak = [bleak_path(args.python, args.bleak_script, args.emitter, n, 500, work) for n in (n1, n2)]
    perf = subprocess.run(["perf", "stat", "-x,", "-e", "instructions", "true"], capture_output=True, text=True)
    result = {
        "lengths": [n1, n2],
        "beaconbridge": (ours[1] - ours[0]) / (n2 - n1),
        "bleak": (bleak[1] - bleak[0]) / (n2 - n1),
        "perfInstructions": perf.returncode == 0 and "<not supported>" not in perf.stderr
        and "<not counted>" not in perf.stderr,
    }
    log("instructions:", result)
    return result


# --- 3 and 4: the daemon --------------------------------------------------------------------


class Notify:
    """The NOTIFY_SOCKET, read all the time as systemd does: the daemon sends STATUS= lines every
    few seconds, and with nobody reading, the socket's queue fills and its blocking sendto stalls
    the daemon (which then did not exit on SIGTERM after the flood)."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            message = self.sock.recv(4096).decode()
            self.messages.put((time.monotonic(), message))

    def clear(self):
        while not self.messages.empty():
            self.messages.get_nowait()

    def wait(self, text, limit=60, prefix=False):
        deadline = time.monotonic() + limit
        while True:
            at, message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
            lines = message.split("\n")
            if any(line.startswith(text) for line in lines) if prefix else text in lines:
                return at


def start_daemon(args, bus, directory, notify, config_text=""):
    config = os.path.join(directory, "beaconbridge.conf")
    with open(config, "w") as f:
        f.write(config_text)
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address, NOTIFY_SOCKET=notify.path)
    env.pop("JOURNAL_STREAM", None)
    env.pop("WATCHDOG_USEC", None)
    notify.clear()
    started = time.monotonic()
    daemon = subprocess.Popen(
        [args.beaconbridge, "run", "--config", config, "--state-dir", directory], env=env,
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(directory, "daemon.log"), "a"))
    ready = notify.wait("READY=1")
    # READY=1 comes once the API is served; the load must wait until discovery runs too.
    notify.wait("STATUS=scanning", prefix=True)
    return daemon, ready - started


def daemon_load(args, work):
    directory = tempfile.mkdtemp(dir=work, prefix="daemon-")
    bus = Bus(directory)
    emitter = Emitter(args.emitter, bus, args.range_beacons)
    notify = Notify(directory)
    result = {"ready": []}
    for _ in range(args.repeats + 2):
        daemon, ready = start_daemon(args, bus, directory, notify)
        result["ready"].append(ready)
        daemon.terminate()
        daemon.wait(timeout=30)
    daemon, _ = start_daemon(args, bus, directory, notify)
    pid = daemon.pid
    time.sleep(2)
    result["baseline"] = memory(pid)["VmRSS"]
    # Idle: discovery running, no advertisement arriving. Context switches over every thread;
    # libdispatch's own worker-pool monitor (a 1 Hz timer on its manager thread, in any Swift
    # program that uses the global executor on Linux) is about one of them a second.
    # Counted per thread, so that an idle worker thread exiting meanwhile does not subtract.
    before, started = switches_by_thread(pid), time.monotonic()
    time.sleep(args.idle_seconds)
    after = switches_by_thread(pid)
    result["idleSwitchesPerSecond"] = sum(n - before.get(tid, 0) for tid, n in after.items()) / (
        time.monotonic() - started)
    # 200 beacons at 10 Hz, in windows.
    windows = args.load_windows
    total = int(2000 * args.window_seconds * windows)
    emitter.send(f"stream 200 2000 {total}")
    result["load"] = []
    last = Sample(pid)
    for _ in range(windows):
        time.sleep(args.window_seconds)
        now = Sample(pid)
        d = now.since(last)
        result["load"].append(d["cpu"] / d["wall"] * 100)
        last = now
    _, sent, seconds = emitter.reply().split()
    result["loadRate"] = int(sent) / float(seconds)
    result["loadHWM"] = memory(pid)["VmHWM"]
    log("daemon load:", result)
    # 1,000 beacons in range, each heard about 20 times.
    emitter(f"stream {args.range_beacons} 2000 {args.range_beacons * 20}")
    time.sleep(1)
    # As an operator sees it: `status --json` asked for them once (the document for 1,000 beacons
    # is built, sent and freed).
    subprocess.run([args.beaconbridge, "status", "--json"], env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address),
                   check=True, capture_output=True)
    time.sleep(0.5)
    result["range1000"] = memory(pid)["VmRSS"]
    # The flood: 100k random addresses (each a new device and a new beacon), then BlueZ drops
    # them (InterfacesRemoved, as after TemporaryTimeout).
    # The peak is sampled while the flood is being taken in (VmHWM would include the start-up
    # and load phases; RSS read once the flood has settled missed the transient peak).
    before = Sample(pid)
    # The bus too: on a loaded machine dbus-daemon can fall behind, and the daemon idles in between.
    with RSSPeak(pid) as peak:
        _, sent, seconds = emitter(f"flood {args.flood} 0").split()
        quiesce([pid, bus.process.pid], limit=600)
    result["floodCPU"] = Sample(pid).since(before)["cpu"]
    result["floodPeak"] = peak.value
    result["floodSettled"] = memory(pid)["VmRSS"]
    emitter("unflood")
    quiesce([pid, bus.process.pid], limit=600)
    # Then 2 s without work, not half a second: on a loaded machine (load average 15) three of six
    # runs of this step read 21.4-21.6 MB "after" the flood, with 5.4-5.7 MB of heap and 3.3-3.6 MB
    # of anonymous mappings (2.4-3.4 and 0.9 once settled); none of six did with this longer wait.
    quiesce([pid, bus.process.pid], settle=2.0, limit=600)
    time.sleep(2)
    result["afterFlood"] = memory(pid)["VmRSS"]
    # Back to normal traffic for a while.
    emitter(f"stream 200 2000 {2000 * 5}")
    time.sleep(1)
    result["afterFloodTraffic"] = memory(pid)["VmRSS"]
    result["hwm"] = memory(pid)["VmHWM"]
    result["alive"] = daemon.poll() is None
    log("daemon memory:", result)
    stopping = time.monotonic()
    daemon.terminate()
    try:
        daemon.wait(timeout=120)
        result["stopSeconds"] = time.monotonic() - stopping
    except subprocess.TimeoutExpired:
        result["stopSeconds"] = None
        daemon.kill()
        daemon.wait()
    result["afterUpload"] = daemon_after_upload(args, work, bus, emitter, notify)
    log("daemon after upload:", result["afterUpload"])
    result["backlog"] = daemon_backlog(args, work, bus, notify)
    log("daemon backlog:", result["backlog"])
    emitter.stop()
    bus.stop()
    return result


def daemon_after_upload(args, work, bus, emitter, notify):
    """A fresh daemon uploading to a fake backend on loopback (Tests/Support/fake_backend.py):
    1,000 beacons in range, one trip whose batch it posts (the first request loads libcurl),
    then 1,000 beacons again and its RSS. Returns {"before", "after"} in MB."""
    directory = tempfile.mkdtemp(dir=work, prefix="upload-")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    received = os.path.join(directory, "backend.log")
    backend = subprocess.Popen(
        [sys.executable, os.path.join(root, "Tests/Support/fake_backend.py"), "--log", received],
        stdout=subprocess.PIPE, text=True)
    try:
        port = int(backend.stdout.readline().split()[1])
        config = ("[Trips]\nunresolvedPolicy = fallback\nfallbackDeviceId = BENCH-1\nlateWindow = 0\n"
                  f"[Upload]\nURL = http://127.0.0.1:{port}/trips\n")
        daemon, _ = start_daemon(args, bus, directory, notify, config)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address)
        emitter(f"stream {args.range_beacons} 2000 {args.range_beacons * 20}")
        time.sleep(1)
        out = {"before": memory(daemon.pid)["VmRSS"]}
        cli = [args.beaconbridge, "trip"]
        subprocess.run(cli + ["start", "--trip-id", "bench-1"], env=env, check=True, capture_output=True)
        subprocess.run(cli + ["events", "--trip-id", "bench-1", "-"], env=env, check=True, capture_output=True,
                       input=b'[{"type":"braking"}]')
        subprocess.run(cli + ["end", "--trip-id", "bench-1"], env=env, check=True, capture_output=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(received) and any(
                    str(json.loads(line)["status"]) == "200" for line in open(received) if line.strip()):
                break
            time.sleep(0.1)
        else:
            daemon.kill()
            daemon.wait()
            raise SystemExit("bench: the daemon did not upload its batch in 30 s")
        emitter(f"stream {args.range_beacons} 2000 {args.range_beacons * 20}")
        time.sleep(1)
        out["after"] = memory(daemon.pid)["VmRSS"]
        daemon.terminate()
        daemon.wait(timeout=30)
        return out
    finally:
        backend.terminate()
        backend.wait()


def daemon_backlog(args, work, bus, notify):
    """RSS with `args.backlog` batches waiting in the outbox (an open trip in postTrip mode, as
    after days offline), against RSS with none: the outbox stays in SQLite, read a window at a
    time, and a restart does not load it. Each RSS is read after `status --json`. Returns
    {"none", "waiting", "restarted"} in MB."""
    import sqlite3
    directory = tempfile.mkdtemp(dir=work, prefix="backlog-")
    config = ("[Trips]\nunresolvedPolicy = fallback\nfallbackDeviceId = BENCH-1\nlateWindow = 0\nsending = postTrip\n"
              "[Upload]\nURL = http://127.0.0.1:9/trips\n[Outbox]\nMaxBatches = %d\n" % (args.backlog * 2))
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address)

    def measured():
        daemon, _ = start_daemon(args, bus, directory, notify, config)
        subprocess.run([args.beaconbridge, "status", "--json"], env=env, check=True, capture_output=True)
        time.sleep(1)
        rss = memory(daemon.pid)["VmRSS"]
        daemon.terminate()
        daemon.wait(timeout=30)
        return rss

    out = {"none": measured()}
    db = sqlite3.connect(os.path.join(directory, "beaconbridge.sqlite"), isolation_level=None)
    now = time.time()
    db.execute("BEGIN")
    db.execute("INSERT INTO trips (trip_id, started_at, resolution, beacon_mode, next_sequence) VALUES "
               "('backlog', ?, '{\"reason\":\"configured\",\"deviceId\":\"BENCH-1\"}', 0, ?)", (now, args.backlog))
    db.executemany("INSERT INTO queue (trip_id, sequence, events, received_at, state) VALUES ('backlog', ?, ?, ?, 1)",
                   ((i, '[{"type":"braking","n":%d,"g":0.41}]' % i, now) for i in range(args.backlog)))
    db.execute("COMMIT")
    db.close()
    out["waiting"] = measured()
    out["restarted"] = measured()
    return out


# --- 1 and 4: in process --------------------------------------------------------------------


def in_process(args):
    out = subprocess.run([args.bench, "--repeats", str(args.repeats)], check=True, capture_output=True, text=True)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return [l for l in lines if l["measure"] == "core"], [l for l in lines if l["measure"] == "tripStart"]


# --- report ---------------------------------------------------------------------------------


def fmt(values, unit="", scale=1.0, digits=2):
    m, lo, hi = median_spread([v * scale for v in values])
    if m is None:
        return "n/a"
    return f"{m:.{digits}f}{unit} ({lo:.{digits}f}–{hi:.{digits}f})"


def machine():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = open("/proc/loadavg").read().split()[:3]
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {
        "cpu": model, "cores": os.cpu_count(), "kernel": platform.release(), "load": " ".join(load),
        "swift": swift[0] if swift else "?",
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--beaconbridge", required=True)
    p.add_argument("--bench", required=True)
    p.add_argument("--emitter", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--bleak-script", required=True)
    p.add_argument("--floor", help="the C floor program (Benchmarks/floor.c), run beside the peers")
    p.add_argument("--harness", help="DBusPathBench, for instructions per advertisement (valgrind)")
    p.add_argument("--instruction-lengths", type=int, nargs=2, default=[2_000, 6_000], metavar=("N1", "N2"))
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--beacons", type=int, default=200)
    p.add_argument("--steady-rate", type=float, default=2000)
    p.add_argument("--steady-seconds", type=float, default=15)
    p.add_argument("--slow-rate", type=float, default=500, help="a second steady phase (0: none)")
    p.add_argument("--flat-total", type=int, default=100_000)
    p.add_argument("--range-beacons", type=int, default=1000)
    p.add_argument("--window-seconds", type=float, default=10)
    p.add_argument("--load-windows", type=int, default=3)
    p.add_argument("--flood", type=int, default=100_000)
    p.add_argument("--backlog", type=int, default=100_000, help="batches waiting in the outbox")
    p.add_argument("--idle-seconds", type=float, default=60)
    p.add_argument("--only", default="core,peers,instructions,daemon")
    args = p.parse_args()
    only = args.only.split(",")
    work = tempfile.mkdtemp(prefix="beaconbridge-bench-")
    m0 = machine()
    started = datetime.datetime.now(datetime.timezone.utc)
    core, trips = in_process(args) if "core" in only else ([], [])
    log("core:", core)
    log("tripStart:", trips)
    peers = dbus_vs_bleak(args, work) if "peers" in only else []
    counted = instructions_per_ad(args, work) if "instructions" in only and args.harness else {}
    if "instructions" in only and not args.harness:
        log("instructions per advertisement: NOT MEASURED (no --harness DBusPathBench given)")
    daemon = daemon_load(args, work) if "daemon" in only else {}
    m1 = machine()
    raw = {"core": core, "tripStart": trips, "peers": peers, "instructions": counted, "daemon": daemon,
           "machine": [m0, m1]}
    with open(os.path.join(os.path.dirname(args.out) or ".", "performance-raw.json"), "w") as f:
        json.dump(raw, f, indent=1, sort_keys=True)
    write_report(args, raw, started)


def wake_and_ad(run, name):
    """CPU seconds per wake-up and per advertisement of one peer in one run, or None.

    A batching consumer's CPU per ad is a wake-up's cost spread over the ads it reads plus each
    ad's own: cpu = wake × switches + ad, per ad. The steady and slow phases give two such lines
    (about the same wake-ups a second, fewer ads at the slow rate), solved for both unknowns.
    Context switches count the wake-ups of every thread, the reader's and the others' alike, so
    the wake-up cost is their average."""
    keys = [f"{phase}.{name}.{measure}" for phase in ("steady", "slow") for measure in ("cpu100k", "switches100k")]
    if not all(k in run for k in keys):
        return None
    cpu_steady, sw_steady, cpu_slow, sw_slow = (run[k] / 1e5 for k in keys)
    if sw_slow - sw_steady <= 0:
        return None
    wake = (cpu_slow - cpu_steady) / (sw_slow - sw_steady)
    return wake, cpu_steady - wake * sw_steady


def write_report(args, raw, started):
    core, trips, peers, daemon = raw["core"], raw["tripStart"], raw["peers"], raw["daemon"]
    rows = []

    def row(measure, value, goal="", met=None):
        rows.append((measure, value, goal, "" if met is None else ("met" if met else "NOT met")))

    if core:
        parse_track = statistics.median(c["parseTrack"] for c in core)
        row("Core: parse + track, iBeacon ads/s per core", fmt([c["parseTrack"] for c in core], " M", 1e-6),
            "≥ 5 M/s", parse_track >= 5e6)
        row("Core: parse only, ads/s per core", fmt([c["parse"] for c in core], " M", 1e-6))
        row("Core: whole pipeline (presence + active beacon), ads/s per core",
            fmt([c["pipeline"] for c in core], " M", 1e-6))
    for phase, label in (("steady", f"steady {args.steady_rate:,.0f}/s"), ("flat", "flat out")):
        if not peers:
            break
        bb = [r[f"{phase}.beaconbridge.cpu100k"] for r in peers]
        bl = [r[f"{phase}.bleak.cpu100k"] for r in peers]
        ratios = [b / a for a, b in zip(bb, bl)]
        rate = statistics.median(r[f"{phase}.rate"] for r in peers)
        row(f"D-Bus {label} (achieved {rate:,.0f}/s): beaconbridge scan, CPU s per 100k ads", fmt(bb, " s", 1, 3))
        row(f"D-Bus {label}: bleak BleakScanner, CPU s per 100k ads", fmt(bl, " s", 1, 3))
        goal = 20 if phase == "steady" else 5  # the goal: ≥ 20× at 2,000/s, ≥ 5× flat out
        row(f"D-Bus {label}: bleak ÷ beaconbridge (CPU ratio)", fmt(ratios, "×", 1, 1), f"≥ {goal}×",
            statistics.median(ratios) >= goal)
        if all(f"{phase}.floor.cpu100k" in r for r in peers):
            fl = [r[f"{phase}.floor.cpu100k"] for r in peers]
            row(f"D-Bus {label}: C floor (reads and frames the same socket, nothing else), CPU s per 100k ads",
                fmt(fl, " s", 1, 3))
            row(f"D-Bus {label}: beaconbridge ÷ floor (CPU ratio)", fmt([a / f for a, f in zip(bb, fl)], "×", 1, 1))
            # The most any consumer of this stream could reach against bleak: one that costs no
            # more than reading the socket. A goal above it cannot be met on this stream.
            row(f"D-Bus {label}: bleak ÷ floor (the ceiling of the CPU ratio)",
                fmt([b / f for b, f in zip(bl, fl)], "×", 1, 1))
        row(f"D-Bus {label}: context switches per 100k ads, beaconbridge / bleak",
            fmt([r[f"{phase}.beaconbridge.switches100k"] for r in peers], "", 1, 0) + " / "
            + fmt([r[f"{phase}.bleak.switches100k"] for r in peers], "", 1, 0))
        if phase == "steady":
            row(f"D-Bus {label}: % of one core, beaconbridge / bleak",
                fmt([r["steady.beaconbridge.core"] for r in peers], "%", 1, 2) + " / "
                + fmt([r["steady.bleak.core"] for r in peers], "%", 1, 1))
    if peers:
        steady = [r["steady.beaconbridge.cpu100k"] for r in peers]
        flat = [r["flat.beaconbridge.cpu100k"] for r in peers]
        row("D-Bus: beaconbridge's CPU per ad flat out ÷ at steady 2,000/s",
            fmt([f / s for f, s in zip(flat, steady)], "", 1, 2), "≤ 1",
            statistics.median(flat) <= statistics.median(steady))
        if all("flat.floor.cpu100k" in r and "steady.floor.cpu100k" in r for r in peers):
            row("D-Bus: the floor's own CPU per ad flat out ÷ at steady 2,000/s (the machine's share of the above)",
                fmt([r["flat.floor.cpu100k"] / r["steady.floor.cpu100k"] for r in peers], "", 1, 2))
        names = [n for n in ("beaconbridge", "floor", "bleak") if all(f"slow.{n}.cpu100k" in r for r in peers)]
        if names:
            row(f"D-Bus steady {args.slow_rate:,.0f}/s: CPU s per 100k ads, " + " / ".join(names),
                " / ".join(fmt([r[f"slow.{n}.cpu100k"] for r in peers], " s", 1, 3) for n in names))
        for name, label in (("beaconbridge", "beaconbridge"), ("floor", "the floor")):
            parts = [wake_and_ad(r, name) for r in peers]
            if None in parts:
                continue
            row(f"D-Bus: {label}, CPU per wake-up + per ad (solved from steady {args.slow_rate:,.0f}/s and "
                f"{args.steady_rate:,.0f}/s on context switches per ad)",
                fmt([w for w, _ in parts], " µs", 1e6, 0) + " + " + fmt([a for _, a in parts], " µs", 1e6, 2))
        every = all(r["beaconbridge.beacons"] == args.beacons and r["bleak.beacons"] == args.beacons for r in peers)
        row("D-Bus: distinct beacons seen, beaconbridge / bleak (of %d)" % args.beacons,
            " ".join(f'{r["beaconbridge.beacons"]}/{r["bleak.beacons"]}' for r in peers)
            + "; bleak callbacks %s of %d sent" % (
                " ".join(str(r["bleak.callbacks"]) for r in peers), peers[0]["expected"])
            + ("; floor framed %s" % " ".join(str(r["floor.messages"]) for r in peers)
               if all("floor.messages" in r for r in peers) else ""),
            "all", every)
    counted = raw.get("instructions")
    if counted:
        n1, n2 = counted["lengths"]
        row(f"D-Bus at 500/s: instructions per ad (callgrind, slope {n1:,}→{n2:,} ads), beaconbridge's D-Bus path "
            "(DBusPathBench: socket to pipeline) / bleak (interpreter and bleak, every thread)",
            f'{counted["beaconbridge"]:,.0f} / {counted["bleak"]:,.0f}')
        row("D-Bus at 500/s: bleak ÷ beaconbridge (instructions per ad)",
            f'{counted["bleak"] / counted["beaconbridge"]:.1f}×')
        row("`perf stat -e instructions` (hardware counter)",
            "supported (not used: callgrind above)" if counted["perfInstructions"]
            else "not supported by this kernel/VM")
    if daemon:
        load = daemon["load"]
        row(f"Daemon: 200 beacons × 10 Hz, {len(load)} × {args.window_seconds:.0f} s windows, % of one core",
            fmt(load, "%", 1, 2), "≤ 2%", statistics.median(load) <= 2)
        row("Daemon: peak RSS (VmHWM) after that load", f'{daemon["loadHWM"]:.1f} MB')
        row("Daemon: RSS idle after READY", f'{daemon["baseline"]:.1f} MB')
        if "idleSwitchesPerSecond" in daemon:
            row(f"Daemon: idle {args.idle_seconds:.0f} s (scanning, no advertisement), context switches per second",
                f'{daemon["idleSwitchesPerSecond"]:.2f}', "≤ 1 (+ libdispatch's 1 Hz monitor)",
                daemon["idleSwitchesPerSecond"] <= 2)
        row("Daemon: RSS with %d beacons in range, after `status --json`" % args.range_beacons, f'{daemon["range1000"]:.1f} MB',
            "≤ 15 MB", daemon["range1000"] <= 15)
        if "afterUpload" in daemon:
            after = daemon["afterUpload"]
            row("Daemon: RSS with %d beacons in range, after its first upload (a fresh daemon: before it %.1f MB)"
                % (args.range_beacons, after["before"]), f'{after["after"]:.1f} MB', "≤ 15 MB", after["after"] <= 15)
        row("Daemon: flood of %s random addresses: RSS at peak / after BlueZ drops them / after 5 s of normal "
            "traffic" % f"{args.flood:,}",
            f'{daemon["floodPeak"]:.1f} / {daemon["afterFlood"]:.1f} / {daemon["afterFloodTraffic"]:.1f} MB '
            f'(CPU for the flood {daemon["floodCPU"]:.1f} s; VmHWM {daemon["hwm"]:.1f} MB)',
            "bounded, back to baseline",
            daemon["alive"] and daemon["afterFloodTraffic"] <= daemon["baseline"] * 1.25 + 2)
        if "backlog" in daemon:
            b = daemon["backlog"]
            row("Daemon: RSS with %s batches waiting in the outbox / after a restart (with none: %.1f MB)"
                % (f"{args.backlog:,}", b["none"]), f'{b["waiting"]:.1f} / {b["restarted"]:.1f} MB',
                "within 2 MB of none", max(b["waiting"], b["restarted"]) <= b["none"] + 2)
        row("Daemon: `run` start to READY=1", fmt(daemon["ready"], " ms", 1000, 0))
        stop = daemon.get("stopSeconds")
        row("Daemon: SIGTERM to exit, after the flood",
            "did not exit in 120 s (killed)" if stop is None else f"{stop:.1f} s")
    if trips:
        p99 = statistics.median(t["p99"] for t in trips)
        row("Trip-start snapshot latency, p50", fmt([t["p50"] for t in trips], " µs", 1e6, 0))
        row("Trip-start snapshot latency, p99", fmt([t["p99"] for t in trips], " µs", 1e6, 0), "≤ 1 ms",
            p99 <= 1e-3)

    widths = [max(len(r[i]) for r in rows + [("Measure", "Median (min–max)", "Goal", "")]) for i in range(4)]
    header = ("Measure", "Median (min–max)", "Goal", "")
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print("\n".join(lines))

    m0, m1 = raw["machine"]
    md = ["| Measure | Median (min–max) | Goal | |", "|---|---|---|---|"]
    for r in rows:
        md.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    splice(args.out, "\n".join(md) + "\n\n" + (
        f"Run {started:%Y-%m-%d %H:%M} UTC, {args.repeats} repeats, on {m0['cpu']} ({m0['cores']} cores), "
        f"Linux {m0['kernel']}, {m0['swift']}. Load average {m0['load']} at the start and {m1['load']} "
        f"at the end: the machine was shared, so every figure is CPU time of the process measured, not "
        f"wall time, and peers ran side by side on the same stream.\n"))


# The skeleton of docs/PERFORMANCE.md when there is none: the reference's sections, the table
# between its markers.
REFERENCE = """# Performance

`make bench` measures beaconbridge against its peers (bleak) and the floor (a C program that only
reads the same socket), prints one table and rewrites the table below. The raw figures of the
last run are in `docs/performance-raw.json`; what was tried is under "What was tried".

{begin}
{end}

## Goals

## Method

## Where the daemon's memory goes

## How to reproduce
"""


def splice(path, table):
    """Replaces the text between the table markers in docs/PERFORMANCE.md (the prose stays)."""
    begin, end = "<!-- bench:table:begin -->", "<!-- bench:table:end -->"
    text = open(path).read() if os.path.exists(path) else REFERENCE.format(begin=begin, end=end)
    if begin not in text:
        raise SystemExit(f"run.py: {path} has no {begin} marker: put it where the table goes")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + "\n" + table + end + tail)


if __name__ == "__main__":
    main()
