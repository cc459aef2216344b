#!/usr/bin/env python3
"""The standing hostile suite (`make test-hostile`).

A table of cases through the real binary, one row per class of hostile input: a FIFO where a
file or a folder is expected (configuration, scenario, capture, trip events, G-Zone payload and
folder, token and TLS files, the state directory), arguments that are not UTF-8, a repeated
option, `help` with an unknown command, read-only commands on a missing state directory or
store (scan among them) and on a read-only one (a bind mount remounted `ro`: pairs, replay,
doctor, diagnose, which writes its bundle whatever the state), a scenario with a repeated key
or a misspelt pairing field, key files (pair's and provision's lock key) with a byte order mark or a mode others can read, provision's less
secure method without its flag, control and bidi characters in a path echoed in a message, a trip
batch over the 16 MiB cap, a malformed advertisement tail (a `rejected` line), an upload URL
libcurl cannot use, a secret under a URL parameter no list knows, two daemons on one state
directory, a daemon whose configuration becomes a FIFO before SIGHUP (SIGTERM still ends it
within 1 s), fleet topics that are equal or overlap (the trips' topic among them), a broker
that takes every message and never acknowledges one (SIGTERM during a publish still ends the
daemon within 5 s; a real Mosquitto behind Tests/Support/mqtt_proxy.py), and a backend that
never answers or trickles its answer (every trip call answers within 1 s, in realtime and
postTrip mode; SIGTERM within 5 s).

Each case asserts
  - the exit status,
  - the message (a regular expression over stderr, or stdout where the command reports there),
  - that no raw control or bidi character reaches the terminal, and
  - that nothing changed on disk: the case's scratch folder is listed (lstat only: a FIFO is
    never opened) before and after, and any difference fails, except the files a row allows.
Every process has a time limit: a hang fails its case and the suite goes on.

Commands that need a bus get DBUS_SYSTEM_BUS_ADDRESS of a socket nobody listens on, so they fail
fast; the daemon rows start private dbus-daemons (dbus-daemon, from scripts/deps-test.txt).

    scripts/check-hostile.py [BINARY]      default .build/debug/beaconbridge
"""

import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Absolute: the cases run in scratch directories of their own.
BINARY = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/beaconbridge")
TIMEOUT = 20
GZONE = os.path.join(ROOT, "Tests/Fixtures/gzone/load1")
UUID = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"
# C0 but LF, DEL, C1, and the bidi controls: none may reach a terminal raw.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
BAD_TEXT = ["Fatal error", "NSCocoaErrorDomain", "Error Domain=", "DecodingError", "The given data", "SQLite code",
            "Swift runtime failure", "\ufffd", "(message:", "Failure("]


def snapshot(top):
    """Every entry under `top`: kind, size, mode and content digest (regular files only)."""
    out = {}
    if not os.path.lexists(top):
        return out
    for base, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(base, name)
            info = os.lstat(path)
            digest = None
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(path, top)] = (info.st_mode, info.st_size, digest)
    return out


def run(argv, env, cwd, stdin=subprocess.DEVNULL, timeout=TIMEOUT):
    """Runs the binary (argv items may be bytes); returns (status, stdout, stderr) as text,
    status "timeout" when it did not end in time (it is killed)."""
    proc = subprocess.Popen([BINARY] + argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status = "timeout"
    return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def make_store(t, env):
    """A real store in t/state, made by `pair` (the daemon is not running on the dead bus)."""
    state = os.path.join(t, "state")
    status, _, err = run(["pair", "--uuid", UUID, "--major", "1", "--device-id", "UNIT-1",
                          "--state-dir", state], env, t)
    if status != 0:
        raise RuntimeError(f"could not make a store: {status} {err.strip()}")
    return state


def eid_store(t, env, count):
    """A real store (made by `pair`) holding `count` EID pairings at K = 0, written straight into
    its table: with the default day of tolerance, 694 fit the cold search's limit and 695 do not."""
    state = make_store(t, env)
    db = sqlite3.connect(os.path.join(state, "beaconbridge.sqlite"))
    db.executemany("INSERT INTO key_pairings (scheme, device_id, label, rotation_exponent, clock_offset,"
                   " heard_window, created_at, secret) VALUES ('eid', ?, NULL, 0, 0, NULL, 0, ?)",
                   [("UNIT-%d" % n, "%032x" % (n + 1)) for n in range(count)])
    db.commit()
    db.close()
    return state


def read_only_state(t, env):
    """A real store (made by `pair`) bind-mounted read-only at t/ro: (mount point, cleanup). Needs
    root, as the suite does for its daemons' buses; the row's cleanup unmounts it."""
    state = make_store(t, env)
    mounted = os.path.join(t, "ro")
    os.mkdir(mounted)
    subprocess.run(["mount", "--bind", state, mounted], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", mounted], check=True)
    return mounted, lambda: subprocess.run(["umount", mounted], check=True)


def on_read_only_state(t, env, argv, **row):
    """A row whose argv (a function of the mount point) runs on a read-only state directory."""
    mounted, cleanup = read_only_state(t, env)
    return dict(argv=argv(mounted), cleanup=cleanup, **row)


def fifo(t, name):
    path = os.path.join(t, name)
    os.mkfifo(path, 0o600)
    return path


def gzone_copy(t, name, fifo_payload=None):
    folder = os.path.join(t, name)
    shutil.copytree(GZONE, folder)
    if fifo_payload:
        os.unlink(os.path.join(folder, fifo_payload))
        os.mkfifo(os.path.join(folder, fifo_payload), 0o600)
    return folder


def write(t, name, text, mode=0o600):
    path = os.path.join(t, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


# Each row: (name, setup(t, env) -> dict). The dict gives argv, and optionally status (default 1),
# says (a regex over stderr + stdout), absent (paths that must not exist afterwards), allow
# (relative paths allowed to change), forbid (texts that must not be printed, such as a
# secret), stdin (bytes).
IS_FIFO = r"(it )?is a FIFO, not a regular file"
CASES = [
    ("configuration FIFO: run", lambda t, env: dict(
        argv=["run", "--config", fifo(t, "conf"), "--state-dir", os.path.join(t, "state")],
        says=r"conf: cannot read it: it is a FIFO, not a regular file", absent=["state"])),
    ("configuration FIFO: doctor", lambda t, env: dict(
        argv=["doctor", "--config", fifo(t, "conf"), "--state-dir", make_store(t, env)],
        says=r"conf: cannot read it: it is a FIFO, not a regular file")),
    ("configuration FIFO: diagnose", lambda t, env: dict(
        argv=["diagnose", "--config", fifo(t, "conf"), "--lines", "1", "--state-dir", make_store(t, env),
              "--export", os.path.join(t, "bundle.tar.gz")],
        status=0, says=r"Wrote .*bundle\.tar\.gz", allow=["bundle.tar.gz"])),
    ("export target FIFO: diagnose", lambda t, env: dict(
        argv=["diagnose", "--lines", "1", "--state-dir", make_store(t, env), "--export", fifo(t, "b.tar.gz")],
        says=r"cannot write .*b\.tar\.gz: it is a FIFO, not a regular file")),
    ("export folder FIFO: diagnose", lambda t, env: dict(
        argv=["diagnose", "--lines", "1", "--state-dir", make_store(t, env), "--export",
              os.path.join(fifo(t, "out"), "b.tar.gz")],
        says=r"cannot write .*out/b\.tar\.gz: a part of .*out is not a directory")),
    ("scenario FIFO: simulate", lambda t, env: dict(
        argv=["simulate", fifo(t, "scenario.json")], says=r"scenario\.json: " + IS_FIFO)),
    ("capture FIFO: replay", lambda t, env: dict(
        argv=["replay", fifo(t, "capture.btsnoop")], says=r"capture\.btsnoop: " + IS_FIFO)),
    ("trip events FIFO", lambda t, env: dict(
        argv=["trip", "events", "--trip-id", "t1", fifo(t, "events.json")], says=r"events\.json: " + IS_FIFO)),
    ("G-Zone folder FIFO: gzone status", lambda t, env: dict(
        argv=["gzone", "status", fifo(t, "payloads")], says=r"payloads is a FIFO, not a folder")),
    ("G-Zone payload FIFO: gzone status", lambda t, env: dict(
        argv=["gzone", "status", gzone_copy(t, "load", "player.json")], says=r"player\.json: .*" + IS_FIFO)),
    ("G-Zone payload FIFO: gzone diff", lambda t, env: dict(
        argv=["gzone", "diff", gzone_copy(t, "old"), gzone_copy(t, "new", "game-rounds.json")],
        says=r"game-rounds\.json: .*" + IS_FIFO)),
    ("token file FIFO: doctor", lambda t, env: dict(
        argv=["doctor", "--state-dir", make_store(t, env), "--config",
              write(t, "c.conf", f"[Upload]\nURL = https://example.invalid/t\nTokenFile = {fifo(t, 'token')}\n")],
        says=r"token is a FIFO, not a regular file")),
    ("TLS file FIFO: doctor", lambda t, env: dict(
        argv=["doctor", "--state-dir", make_store(t, env), "--config",
              write(t, "c.conf", f"[Upload]\nURL = https://example.invalid/t\nCAFile = {fifo(t, 'ca.pem')}\n")],
        says=r"CAFile .*ca\.pem is a FIFO, not a regular file")),
    ("state directory FIFO: pair", lambda t, env: dict(
        argv=["pair", "--uuid", UUID, "--device-id", "U", "--state-dir", fifo(t, "state")],
        says=r"state directory .*state is a FIFO, not a directory")),
    ("state directory FIFO: pairs", lambda t, env: dict(
        argv=["pairs", "--state-dir", fifo(t, "state")], says=r"state directory .*state is a FIFO, not a directory")),
    ("scenario that is not JSON", lambda t, env: dict(
        argv=["simulate", write(t, "s.json", '{"events": [')],
        says=r"scenario .*s\.json: not valid JSON: Unexpected end of file")),
    ("trip events that are not JSON", lambda t, env: dict(
        argv=["trip", "events", "--trip-id", "t1", write(t, "e.json", "[1,}")],
        says=r"events .*e\.json: .*invalid JSON at byte 3")),
    ("non-UTF-8 option value", lambda t, env: dict(
        argv=["unpair", "--device-id", b"caf\xff", "--state-dir", os.path.join(t, "state")], status=64,
        says=r'the value of --device-id is not valid UTF-8 \("caf\\xFF"\)', absent=["state"])),
    ("non-UTF-8 command word", lambda t, env: dict(
        argv=[b"pa\xc3irs"], status=64, says=r'argument 1 is not valid UTF-8 \("pa\\xC3irs"\)')),
    ("repeated option", lambda t, env: dict(
        argv=["unpair", "--device-id", "a", "--device-id", "b", "--state-dir", os.path.join(t, "state")],
        status=64, says=r"--device-id given twice", absent=["state"])),
    ("repeated flag", lambda t, env: dict(argv=["pairs", "--json", "--json"], status=64, says=r"--json given twice")),
    ("help with an unknown command", lambda t, env: dict(
        argv=["help", "nosuchcommand"], status=64, says=r"help: unknown command \"nosuchcommand\"")),
    ("--version with an argument", lambda t, env: dict(
        argv=["--version", "now"], status=64, says=r"--version: unexpected argument")),
    ("pairs on a missing state directory", lambda t, env: dict(
        argv=["pairs", "--state-dir", os.path.join(t, "missing")], says=r"missing was not found", absent=["missing"])),
    ("pairs --json on a missing state directory", lambda t, env: dict(
        argv=["pairs", "--json", "--state-dir", os.path.join(t, "a/b")], says=r"a/b was not found", absent=["a"])),
    ("pairs on a directory without a store", lambda t, env: (os.mkdir(os.path.join(t, "empty")), dict(
        argv=["pairs", "--state-dir", os.path.join(t, "empty")],
        says=r"empty/beaconbridge\.sqlite was not found"))[1]),
    ("doctor on a missing state directory", lambda t, env: dict(
        argv=["doctor", "--config", write(t, "c.conf", ""), "--state-dir", os.path.join(t, "missing")],
        says=r"missing was not found", absent=["missing"])),
    # The bundle is written all the same: the missing directory is its finding.
    ("diagnose on a missing state directory", lambda t, env: dict(
        argv=["diagnose", "--lines", "1", "--state-dir", os.path.join(t, "missing"),
              "--export", os.path.join(t, "bundle.tar.gz")], status=0,
        says=r"(?s)(?=.*Wrote .*bundle\.tar\.gz)(?=.*found: the state directory .*missing was not found)",
        absent=["missing"], allow=["bundle.tar.gz"])),
    # A read-only state directory (a real bind mount, remounted ro): read, nothing written.
    ("pairs on a read-only state directory", lambda t, env: on_read_only_state(
        t, env, lambda ro: ["pairs", "--state-dir", ro], status=0, says=r"UNIT-1")),
    ("replay --state-dir on a read-only state directory", lambda t, env: on_read_only_state(
        t, env, lambda ro: ["replay", os.path.join(ROOT, "Tests/HCITests/Fixtures/vm-ibeacons.btsnoop"),
                            "--state-dir", ro], status=0, says=r"CAPTURE")),
    ("doctor on a read-only state directory", lambda t, env: on_read_only_state(
        t, env, lambda ro: ["doctor", "--config", write(t, "c.conf", ""), "--state-dir", ro],
        says=r"(?s)read-only file system; its store was read.*the store is healthy")),
    ("diagnose on a read-only state directory", lambda t, env: on_read_only_state(
        t, env, lambda ro: ["diagnose", "--lines", "1", "--config", write(t, "d.conf", ""), "--state-dir", ro,
                            "--export", os.path.join(t, "b.tar.gz")], status=0,
        says=r"Wrote .*b\.tar\.gz \(\d+ files; \d+ piece", allow=["b.tar.gz"])),
    # JSON read exactly: a repeated key, a misspelt pairing field.
    ("a repeated key in a scenario: simulate", lambda t, env: dict(
        argv=["simulate", write(t, "dup.json", '{"config":{"exitTimeout":10,"exitTimeout":20},"events":[]}')],
        says=r'the key "exitTimeout" appears twice in one object')),
    ("a misspelt pairing field in a scenario: simulate", lambda t, env: dict(
        argv=["simulate", write(t, "typo.json", '{"pairings":[{"uuid":"' + UUID + '","major":1,"mnior":7,'
                                                '"deviceId":"VAN-7"}],"events":[]}')],
        says=r'pairings\[0\] has an unknown key "mnior"')),
    # Messages that say what is true.
    ("a key file with a byte order mark: pair", lambda t, env: dict(
        argv=["pair", "--irk-file", write(t, "bom.key", "\ufeff" + "0" * 32 + "\n"), "--device-id", "U",
              "--state-dir", os.path.join(t, "s")],
        says=r"starts with a UTF-8 byte order mark", absent=["s"])),
    ("a key file others can read: pair", lambda t, env: dict(
        argv=["pair", "--irk-file", write(t, "open.key", "0" * 32 + "\n", mode=0o644), "--device-id", "U",
              "--state-dir", os.path.join(t, "s")],
        says=r"to fix: chmod 0600 .*open\.key \(the owner only\)", forbid=["chown"], absent=["s"])),
    # provision: the lock key under the key-file rule, the less secure method only when asked,
    # and nothing stored when the beacon cannot be reached. Root only: run as another user, the
    # sentence says so instead.
    ("a lock key file others can read: provision", lambda t, env: dict(
        argv=["provision", "--address", "C0:FF:EE:00:0E:01", "--lock-key-file",
              write(t, "lock.key", "0" * 32 + "\n", mode=0o644), "--rotation-exponent", "10", "--device-id", "U",
              "--state-dir", os.path.join(t, "s")],
        says=r"(--lock-key-file: .*to fix: chmod 0600 .*lock\.key \(the owner only\)|run it as root)", forbid=["chown"],
        absent=["s"])),
    ("a lock key file that is a FIFO: provision", lambda t, env: dict(
        argv=["provision", "--address", "C0:FF:EE:00:0E:01", "--lock-key-file", fifo(t, "lock.fifo"),
              "--rotation-exponent", "10", "--device-id", "U", "--state-dir", os.path.join(t, "s")],
        says=r"(--lock-key-file: .*lock\.fifo|run it as root)", absent=["s"])),
    ("a lock key file with a byte order mark: provision", lambda t, env: dict(
        argv=["provision", "--address", "C0:FF:EE:00:0E:01", "--lock-key-file",
              write(t, "bom.key", "\ufeff" + "0" * 32 + "\n"), "--rotation-exponent", "10", "--device-id", "U",
              "--state-dir", os.path.join(t, "s")],
        says=r"(starts with a UTF-8 byte order mark|run it as root)", absent=["s"])),
    ("no bluetoothd to reach: provision stores nothing", lambda t, env: dict(
        argv=["provision", "--address", "C0:FF:EE:00:0E:01", "--lock-key-file", write(t, "lock.key", "0" * 32 + "\n"),
              "--rotation-exponent", "10", "--device-id", "U", "--state-dir", os.path.join(t, "s")],
        says=r"(provision: connecting: (cannot reach the system bus|bluetoothd did not answer)|run it as root)",
        forbid=["0" * 32], absent=["s"])),
    # The cold search's limit (docs/authentication.md): the EID pairing that would take one
    # search past 10 minutes is refused with the sentence, and the store is left as it was.
    ("an EID pairing past the cold search's limit: pair", lambda t, env: dict(
        argv=["pair", "--eid-key-file", write(t, "eid.key", "ab" * 16 + "\n"), "--rotation-exponent", "0",
              "--beacon-clock", "1000", "--device-id", "U", "--state-dir", eid_store(t, env, 694)],
        says=r"beaconbridge: \[ActiveBeacon\] eidClockTolerance = 86400 s with 695 Eddystone-EID pairing\(s\), 695 of "
             r"them fast-rotating .* over the limit of 10 min .*; lower eidClockTolerance",
        forbid=["ab" * 16], allow=["state/beaconbridge.lock"])),
    ("an EID beacon past the cold search's limit: provision registers nothing", lambda t, env: dict(
        argv=["provision", "--address", "C0:FF:EE:00:0E:01", "--lock-key-file", write(t, "lock.key", "0" * 32 + "\n"),
              "--rotation-exponent", "0", "--device-id", "U", "--state-dir", eid_store(t, env, 694)],
        says=r"(provision: \[ActiveBeacon\] eidClockTolerance = 86400 s with 695 Eddystone-EID pairing\(s\), .*"
             r"nothing was registered|run it as root)",
        forbid=["0" * 32])),
    ("the shared-key method without its flag: provision", lambda t, env: dict(
        argv=["provision", "--address", "C0:FF:EE:00:0E:01", "--lock-key-file", "k", "--rotation-exponent", "10",
              "--device-id", "U", "--shared-key-file", "s.key"],
        status=64, says=r"--shared-key-file is the less secure method.*--less-secure-shared-key")),
    ("an address that is not one: provision", lambda t, env: dict(
        argv=["provision", "--address", "C0:FF:EE:00:0E", "--lock-key-file", "k", "--rotation-exponent", "10",
              "--device-id", "U"],
        status=64, says=r"--address must be a Bluetooth address such as AA:BB:CC:DD:EE:FF, not \"C0:FF:EE:00:0E\"")),
    ("a rotation exponent that is not whole: pair", lambda t, env: dict(
        argv=["pair", "--eid-key-file", "k", "--rotation-exponent", "1.5", "--beacon-clock", "1",
              "--device-id", "U"], status=64, says=r"--rotation-exponent must be a whole number from 0 to 15, not 1\.5")),
    ("a configuration diagnose cannot read: diagnose", lambda t, env: dict(
        argv=["diagnose", "--lines", "1", "--config", fifo(t, "conf.fifo"), "--state-dir", make_store(t, env),
              "--export", os.path.join(t, "b.tar.gz")], status=0, says=r"Wrote", allow=["b.tar.gz"])),
    ("control and bidi characters in a path", lambda t, env: dict(
        argv=["simulate", os.path.join(t, "a\x1b[2J\u202eb.json")],
        says=r"a\\u\{1B\}\[2J\\u\{202E\}b\.json: no such file")),
    ("control characters in a FIFO's name", lambda t, env: dict(
        argv=["replay", fifo(t, "c\x07\x9bd")], says=r"c\\u\{7\}\\u\{9B\}d: " + IS_FIFO)),
    ("control characters in an unknown command", lambda t, env: dict(
        argv=["\x1b]0;pwned\x07"], status=64, says=r"unknown command '\\u\{1B\}\]0;pwned\\u\{7\}'")),
    ("control characters in a G-Zone value (text mode)", lambda t, env: dict(
        argv=["gzone", "status", gzone_with_escape(t)], status=0, says=r"\\u\{1B\}\[2J")),
    ("scan on a missing state directory", lambda t, env: dict(
        argv=["scan", "--state-dir", os.path.join(t, "typo")],
        says=r"scanning without pairings: the state directory .*typo was not found", absent=["typo"])),
    ("trip events over the 16 MiB cap", lambda t, env: dict(
        argv=["trip", "events", "--trip-id", "T-1", sparse(t, "big.json", 17 << 20)],
        says=r"big\.json: .*(16 MiB|over)")),
    ("replay with a file as the state directory", lambda t, env: dict(
        argv=["replay", os.path.join(ROOT, "Tests/HCITests/Fixtures/vm-ibeacons.btsnoop"), "--state-dir",
              write(t, "notadir", "x")],
        says=r"replay: the state directory .*notadir is a file, not a directory")),
    ("a malformed advertisement tail: simulate", lambda t, env: dict(
        argv=["simulate", os.path.join(ROOT, "Tests/Scenarios/malformed-frames.json")], status=0,
        says=r'"rejected".*malformedTail')),
    ("an upload URL libcurl cannot use: doctor", lambda t, env: dict(
        argv=["doctor", "--config", write(t, "u.conf", "[Upload]\nURL = https://exa mple.com/trips\n"),
              "--state-dir", make_store(t, env)],
        says=r"u\.conf:2: URL is refused by libcurl's URL parser")),
    ("a secret under an unlisted URL parameter: doctor", lambda t, env: dict(
        argv=["doctor", "--config", write(t, "s.conf", "[Upload]\nURL = https://h.example/t?sigv=Zq81-secret&page=2\n"),
              "--state-dir", make_store(t, env)],
        says=r"sigv=<redacted>&page=2", forbid=["Zq81-secret"])),
    ("fleet topics equal: run", lambda t, env: dict(
        argv=["run", "--state-dir", os.path.join(t, "state"), "--config",
              write(t, "c.conf", "[Fleet]\nURL = mqtt://127.0.0.1:1\nBoxId = v\nDesiredTopic = box/{boxId}\n"
                    "ReportedTopic = box/{boxId}\n")],
        says=r"c\.conf:5: \[Fleet\] DesiredTopic \"box/\{boxId\}\" and \[Fleet\] ReportedTopic \"box/\{boxId\}\" "
             r"are the same topic: .*give each a topic of its own", absent=["state"])),
    ("fleet topic overlapping the trips' topic: doctor", lambda t, env: dict(
        argv=["doctor", "--state-dir", make_store(t, env), "--config",
              write(t, "c.conf", "[Upload]\nURL = mqtt://127.0.0.1:1\n[MQTT]\nTopic = fleet/{deviceId}/status\n"
                    "[Fleet]\nBoxId = v\n")],
        says=r"c\.conf:4: \[Fleet\] StatusTopic \"fleet/\{boxId\}/status\" and \[MQTT\] Topic "
             r"\"fleet/\{deviceId\}/status\" overlap \(one topic name matches both\)")),
    # Authentication: a copied private address, a flood of strangers' EIDs, one IRK over the cap.
    ("a replayed private address: simulate", lambda t, env: dict(
        argv=["simulate", os.path.join(ROOT, "Tests/Scenarios/rpa-replay.json")], status=0,
        says=r'"reason":"rpaReplay","detail":"the private address of rpa pairing 1 was first heard more than '
             r'rpaMaxAge ago, or before a newer address of that device: refused as a replay"')),
    ("strangers' EIDs against 5 pairings at K = 0: simulate", lambda t, env: dict(
        argv=["simulate", eid_flood(t)], status=0,
        says=r'"tripTagged".*"resolution":"unresolved"')),
    ("an IRK pairing over the cap: simulate", lambda t, env: dict(
        argv=["simulate", write(t, "irks.json", json.dumps({"pairings": [
            {"irk": f"{n + 1:032x}", "deviceId": f"U-{n}"} for n in range(168)], "events": []}))],
        says=r"pairings\[167\]: a box holds at most 167 pairings by IRK: with more, a random private address "
             r"would match one by chance more often than 1 in 100,000 \(N / 2\^24 for N IRKs\); unpair one first",
        forbid=[f"{168:032x}"])),
]


def eid_flood(t):
    """A scenario: 5 EID pairings at K = 0 with the largest tolerance, 3,000 EIDs no pairing
    makes from 300 addresses over 30 s, and a trip: the searches are bounded by the budget, so it
    ends at once, and the trip stays held."""
    rng = random.Random(36)
    pairings = [{"eid": {"identityKey": f"{rng.getrandbits(128):032x}", "rotationExponent": 0,
                         "beaconClock": 1000}, "deviceId": f"UNIT-{n}"} for n in range(5)]
    events = []
    for i in range(3000):
        eid = f"{rng.getrandbits(64):016X}"
        events.append({"at": round(i / 100, 2), "advertisement": {
            "address": f"C0:FF:EE:00:{i % 300 // 256:02X}:{i % 256:02X}", "rssi": -50,
            "rawHex": "020106" + "0303AAFE" + "0D16AAFE30EB" + eid}})
    events += [{"at": 5, "tripStart": {"tripId": "t1"}}, {"at": 29, "tripEnd": {"tripId": "t1"}}]
    return write(t, "flood.json", json.dumps({
        "config": {"eidClockTolerance": 604800}, "pairings": pairings, "events": events}))


def sparse(t, name, size):
    """A file of `size` bytes that takes no disk: the cap must refuse it before reading it all."""
    path = os.path.join(t, name)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def gzone_with_escape(t):
    """A payload folder whose first game's name holds an escape sequence and a bidi override."""
    folder = gzone_copy(t, "load")
    path = os.path.join(folder, "available-games.json")
    with open(path) as f:
        text = f.read()
    first = re.search(r'"name"\s*:\s*"', text)
    if not first:
        raise RuntimeError("no game name in the G-Zone fixture")
    text = text[:first.end()] + "\\u001b[2J\\u202e" + text[first.end():]
    with open(path, "w") as f:
        f.write(text)
    return folder


class Bus:
    """A private dbus-daemon that lets anyone own any name (as DBusTestSupport's PrivateBus)."""

    def __init__(self, folder):
        os.makedirs(folder)
        config = os.path.join(folder, "bus.conf")
        with open(config, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path={folder}/bus</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/><allow user="*"/></policy></busconfig>""")
        self.proc = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.address = self.proc.stdout.readline().decode().strip()
        if not self.address:
            raise RuntimeError("dbus-daemon printed no address")

    def close(self):
        self.proc.kill()
        self.proc.wait()


class Daemon:
    """`beaconbridge run` on a bus, its stderr in a file."""

    def __init__(self, t, bus, state, config, name):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address)
        for key in ["NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_USEC", "BEACONBRIDGE_STATE_DIR"]:
            env.pop(key, None)
        self.log = os.path.join(t, name + ".log")
        self.logfile = open(self.log, "wb")
        self.proc = subprocess.Popen([BINARY, "run", "--config", config, "--state-dir", state], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.logfile,
                                     start_new_session=True)

    def text(self):
        with open(self.log, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_for(self, pattern, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.text()):
                return True
            if self.proc.poll() is not None:
                return bool(re.search(pattern, self.text()))
            time.sleep(0.05)
        return False

    def exit_status(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout"

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.logfile.close()


def two_daemons(t):
    """The second daemon on one state directory, on another bus, refuses with the first's PID and
    leaves the store as it was; the first one keeps running. So does a CLI write that cannot reach
    the first one's bus."""
    problems = []
    config = write(t, "empty.conf", "")
    state = os.path.join(t, "state")
    buses, daemons = [], []
    try:
        buses = [Bus(os.path.join(t, "bus1")), Bus(os.path.join(t, "bus2"))]
        first = Daemon(t, buses[0], state, config, "first")
        daemons.append(first)
        if not first.wait_for(r"ready: serving"):
            return [f"the first daemon did not become ready: {first.text()[-400:]}"]
        before = snapshot(state)
        second = Daemon(t, buses[1], state, config, "second")
        daemons.append(second)
        status = second.exit_status(TIMEOUT)
        words = second.text()
        if status != 1:
            problems.append(f"the second daemon: exit {status}, not 1; stderr: {words[-400:]}")
        expected = rf"state directory .*state is in use by beaconbridge run \(PID {first.proc.pid}\)"
        if not re.search(expected, words):
            problems.append(f"the second daemon does not name the first one's PID {first.proc.pid}: {words[-400:]}")
        if first.proc.poll() is not None:
            problems.append(f"the first daemon stopped: {first.text()[-400:]}")
        # A CLI write that cannot reach the daemon's bus would write the store itself: refused.
        dead = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=" + os.path.join(t, "no-bus-here"))
        dead.pop("BEACONBRIDGE_STATE_DIR", None)
        status, _, err = run(["pair", "--uuid", UUID, "--device-id", "U2", "--state-dir", state], dead, t)
        if status != 1 or not re.search(rf"is in use by beaconbridge run \(PID {first.proc.pid}\)", err):
            problems.append(f"pair beside the daemon: exit {status}, stderr: {err.strip()[-300:]}")
        after = snapshot(state)
        changed = sorted(k for k in set(before) | set(after)
                         if before.get(k) != after.get(k) and not k.startswith("beaconbridge.sqlite-"))
        if changed:
            problems.append(f"the refused daemon changed the state directory: {changed}")
        first.proc.send_signal(signal.SIGTERM)
        if first.exit_status(TIMEOUT) != 0:
            problems.append("the first daemon did not stop cleanly on SIGTERM")
    finally:
        for d in daemons:
            d.close()
        for b in buses:
            b.close()
    return problems


def fifo_on_sighup(t):
    """The configuration replaced by a FIFO, then SIGHUP: the reload refuses it, keeps the old
    configuration, and SIGTERM still stops the daemon at once."""
    problems = []
    config = write(t, "beaconbridge.conf", "")
    bus, daemon = None, None
    try:
        bus = Bus(os.path.join(t, "bus"))
        daemon = Daemon(t, bus, os.path.join(t, "state"), config, "daemon")
        if not daemon.wait_for(r"ready: serving"):
            return [f"the daemon did not become ready: {daemon.text()[-400:]}"]
        os.unlink(config)
        os.mkfifo(config, 0o600)
        daemon.proc.send_signal(signal.SIGHUP)
        if not daemon.wait_for(r"configuration not reloaded, the old one stays: .*" + IS_FIFO):
            problems.append(f"the reload does not refuse the FIFO: {daemon.text()[-400:]}")
        started = time.monotonic()
        daemon.proc.send_signal(signal.SIGTERM)
        status = daemon.exit_status(TIMEOUT)
        if status != 0:
            problems.append(f"SIGTERM after the FIFO reload: exit {status}, not 0")
        elif time.monotonic() - started > 1:
            problems.append(f"SIGTERM took {time.monotonic() - started:.1f} s")
    finally:
        if daemon:
            daemon.close()
        if bus:
            bus.close()
    return problems


def backend_that(fault):
    """A backend that takes each POST and never answers (`hang`) or trickles its answer (`slow`),
    at the default 30 s upload timeout: in realtime and in postTrip mode every trip call answers
    within 1 s (posting runs on its own task), and SIGTERM stops the daemon within 5 s."""
    def case(t):
        problems = []
        for sending in ["realtime", "postTrip"]:
            folder = os.path.join(t, sending)
            os.makedirs(folder)
            problems += [f"{sending}: {p}" for p in backend_fault(folder, fault, sending)]
        return problems
    return case


def backend_fault(t, fault, sending):
    problems = []
    log = os.path.join(t, "backend.jsonl")
    backend = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests/Support/fake_backend.py"), "--log", log,
                                "--always", fault, "--hang", "120"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    bus, daemon = None, None
    try:
        port = backend.stdout.readline().decode().split()[-1]
        config = write(t, "beaconbridge.conf", f"""[Trips]
unresolvedPolicy = fallback
fallbackDeviceId = VAN-1
lateWindow = 0
sending = {sending}
[Upload]
URL = http://127.0.0.1:{port}/trips
""")
        bus = Bus(os.path.join(t, "bus"))
        daemon = Daemon(t, bus, os.path.join(t, "state"), config, "daemon")
        if not daemon.wait_for(r"ready: serving"):
            return [f"the daemon did not become ready: {daemon.text()[-400:]}"]
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address)
        env.pop("BEACONBRIDGE_STATE_DIR", None)
        events = write(t, "events.json", '[{"type":"braking","g":0.4}]')
        calls = [["trip", "start", "--trip-id", "t1"]] + [["trip", "events", "--trip-id", "t1", events]] * 3 + [
            ["trip", "end", "--trip-id", "t1"], ["trip", "start", "--trip-id", "t2"],
            ["trip", "events", "--trip-id", "t2", events], ["trip", "end", "--trip-id", "t2"]]
        for argv in calls:
            started = time.monotonic()
            status, out, err = run(argv, env, t)
            took = time.monotonic() - started
            if status != 0:
                problems.append(f"{' '.join(argv)}: exit {status}: {err.strip()[-300:]}")
            elif took > 1:
                problems.append(f"{' '.join(argv)} took {took:.1f} s to answer")
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and not (os.path.exists(log) and os.path.getsize(log) > 0):
            time.sleep(0.05)
        if not (os.path.exists(log) and os.path.getsize(log) > 0):
            problems.append("no post reached the backend")
        started = time.monotonic()
        daemon.proc.send_signal(signal.SIGTERM)
        status = daemon.exit_status(TIMEOUT)
        if status != 0:
            problems.append(f"SIGTERM with a post in flight: exit {status}, not 0")
        elif time.monotonic() - started > 5:
            problems.append(f"SIGTERM with a post in flight took {time.monotonic() - started:.1f} s")
    finally:
        if daemon:
            daemon.close()
        if bus:
            bus.close()
        os.killpg(backend.pid, signal.SIGKILL)
        backend.wait()
    return problems


def never_acknowledging_broker(t):
    """A broker that takes every message and never acknowledges one (a real Mosquitto behind
    Tests/Support/mqtt_proxy.py, which drops its PUBACKs), with the upload's default 30 s
    Timeout: SIGTERM during a batch's publish ends the daemon, exit 0, within 5 s."""
    if not shutil.which("mosquitto") and not os.path.exists("/usr/sbin/mosquitto"):
        return ["mosquitto is missing; run scripts/install-deps.sh test"]
    problems = []
    procs, bus, daemon = [], None, None
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            broker_port = probe.getsockname()[1]
        write(t, "mosquitto.conf", f"listener {broker_port} 127.0.0.1\nallow_anonymous true\n"
              + ("user root\n" if os.geteuid() == 0 else ""))
        broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", os.path.join(t, "mosquitto.conf")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(broker)
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", broker_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    return ["mosquitto did not start"]
                time.sleep(0.05)
        proxy_log = os.path.join(t, "proxy.log")
        proxy = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests/Support/mqtt_proxy.py"), "--broker",
                                  str(broker_port), "--puback", "drop", "--log", proxy_log],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append(proxy)
        proxy_port = int(proxy.stdout.readline().decode().strip())
        config = write(t, "beaconbridge.conf", "[Trips]\nunresolvedPolicy = fallback\nfallbackDeviceId = DEPOT-7\n"
                       f"lateWindow = 0\n[Upload]\nURL = mqtt://127.0.0.1:{proxy_port}\n[MQTT]\n"
                       "ClientId = hostile-box\n[Fleet]\nBoxId = hostile-box\n")
        bus = Bus(os.path.join(t, "bus"))
        state = os.path.join(t, "state")
        daemon = Daemon(t, bus, state, config, "daemon")
        if not daemon.wait_for(r"fleet: connected"):
            return [f"the daemon did not connect through the proxy: {daemon.text()[-400:]}"]
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address, BEACONBRIDGE_STATE_DIR=state)
        status, _, err = run(["trip", "start", "--trip-id", "t1"], env, t)
        if status != 0:
            return [f"trip start: exit {status}: {err.strip()[-300:]}"]
        # In realtime mode the call may wait for the post: it is not waited for here.
        events = subprocess.Popen([BINARY, "trip", "events", "--trip-id", "t1", "-"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(events)
        events.stdin.write(b'[{"type":"speed","value":42}]')
        events.stdin.close()
        deadline = time.monotonic() + TIMEOUT
        while True:
            with open(proxy_log) as f:
                lines = f.read().splitlines()
            if "publish fleet/DEPOT-7/trips" in lines and "puback dropped" in lines:
                break
            if time.monotonic() > deadline:
                return [f"the batch was not published through the proxy: {lines[-10:]}"]
            time.sleep(0.05)
        started = time.monotonic()
        daemon.proc.send_signal(signal.SIGTERM)
        status = daemon.exit_status(TIMEOUT)
        took = time.monotonic() - started
        print(f"check-hostile: a stop with a publish never acknowledged took {took:.2f} s")
        if status != 0:
            problems.append(f"SIGTERM during a publish never acknowledged: exit {status}, not 0")
        elif took >= 5:
            problems.append(f"SIGTERM during a publish never acknowledged took {took:.1f} s, not under 5 s")
    finally:
        if daemon:
            daemon.close()
        if bus:
            bus.close()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return problems


SPECIAL = [
    ("two daemons on one state directory", two_daemons),
    ("configuration FIFO on SIGHUP", fifo_on_sighup),
    ("a broker that never acknowledges: a stop under 5 s", never_acknowledging_broker),
    ("a backend that never answers", backend_that("hang")),
    ("a backend that trickles its answer", backend_that("slow")),
]


def check_row(name, setup, env):
    with tempfile.TemporaryDirectory(prefix="bb-hostile-") as t:
        row = setup(t, env)
        try:
            before = snapshot(t)
            status, out, err = run(row["argv"], env, t, timeout=row.get("timeout", TIMEOUT))
            after = snapshot(t)
        finally:
            if "cleanup" in row:
                row["cleanup"]()
        problems = []
        expected = row.get("status", 1)
        if status == "timeout":
            problems.append(f"did not end within {TIMEOUT} s")
        elif status != expected:
            problems.append(f"exit {status}, not {expected}")
        both = err + out
        if not re.search(row["says"], both):
            problems.append(f"the message does not match /{row['says']}/")
        if RAW.search(both):
            problems.append("a raw control or bidi character reached the terminal")
        for bad in BAD_TEXT + row.get("forbid", []):
            if bad in both:
                problems.append(f"the output holds {bad!r}")
        allowed = set(row.get("allow", []))
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k) and k not in allowed)
        if changed:
            problems.append(f"changed on disk: {changed}")
        for path in row.get("absent", []):
            if os.path.lexists(os.path.join(t, path)):
                problems.append(f"{path} was created")
        if problems:
            shown = [a if isinstance(a, str) else repr(a) for a in row["argv"]]
            return [f"{name}: beaconbridge {' '.join(shown)}: " + "; ".join(problems)
                    + f"\n      stderr: {err.strip()[-300:]!r}\n      stdout: {out.strip()[-300:]!r}"]
        return []


def main():
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"check-hostile: {BINARY} is missing; run 'make build'")
    if not shutil.which("dbus-daemon"):
        sys.exit("check-hostile: dbus-daemon is missing; run scripts/install-deps.sh test")
    failures = []
    with tempfile.TemporaryDirectory(prefix="bb-hostile-env-") as scratch:
        env = dict(os.environ)
        env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + os.path.join(scratch, "no-bus-here")
        env.pop("BEACONBRIDGE_STATE_DIR", None)
        env.pop("STATE_DIRECTORY", None)
        for name, setup in CASES:
            try:
                failures += check_row(name, setup, env)
            except Exception as e:  # a broken setup is a failed row, not a crashed suite
                failures.append(f"{name}: {type(e).__name__}: {e}")
    for name, case in SPECIAL:
        with tempfile.TemporaryDirectory(prefix="bb-hostile-") as t:
            try:
                failures += [f"{name}: {p}" for p in case(t)]
            except Exception as e:
                failures.append(f"{name}: {type(e).__name__}: {e}")
    total = len(CASES) + len(SPECIAL)
    if failures:
        print(f"check-hostile: {len(failures)} of {total} cases FAILED", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)
    print(f"check-hostile: {total} cases held (exit status, message, nothing raw, nothing changed on disk)")


if __name__ == "__main__":
    main()
