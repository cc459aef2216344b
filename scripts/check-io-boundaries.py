#!/usr/bin/env python3
"""Every subcommand against broken standard streams (`make test-io`).

The subcommands are read from `beaconbridge --help` (the CLI's command table), so a new command
cannot be forgotten: one without an entry in INVOCATIONS fails this check. Each runs, with a
time limit, with
  - stdin closed and stdout to /dev/full,
  - stdout to /dev/full,
  - stdout to a pipe whose reading end is closed (stdin closed too),
  - stdout closed,
and `--help` with stdout to /dev/full and to a closed pipe. Every run must exit with a status
that is neither 0 (output was lost) nor a signal (a trap or SIGPIPE), within the time limit,
and say why on stderr in one plain line (no Swift trap, no NSCocoaErrorDomain). The commands
that read stdin (`simulate -`, `replay -`, `trip events -`) also run with stdin closed and
stdin a directory, and must name the problem.

Commands that need a bus get DBUS_SYSTEM_BUS_ADDRESS of a socket nobody listens on, so they fail
fast; the store is a scratch --state-dir.

    scripts/check-io-boundaries.py [BINARY]      default .build/debug/beaconbridge
"""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/beaconbridge")
TIMEOUT = 60
SCENARIO = os.path.join(ROOT, "Tests/Scenarios/no-beacon.json")
CAPTURE = os.path.join(ROOT, "Tests/HCITests/Fixtures/vm-ibeacons.btsnoop")
UUID = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"


def lock_key(scratch):
    """A lock key file by the key-file rule (provision reads it before it reaches the bus)."""
    path = os.path.join(scratch, "lock.key")
    with open(path, "w") as f:
        f.write("0" * 32 + "\n")
    os.chmod(path, 0o600)
    return path


def invocations(state, scratch):
    """One invocation per command that gets as far as writing its output (or failing)."""
    sd = ["--state-dir", state]
    # An empty configuration means the defaults: run gets as far as the (dead) bus.
    config = os.path.join(scratch, "empty.conf")
    open(config, "w").close()
    return {
        "demo": [["demo", "--speed", "10000"]],
        "simulate": [["simulate", SCENARIO]],
        "pair": [["pair", "--uuid", UUID, "--major", "1", "--device-id", "UNIT-1"] + sd],
        "provision": [
            ["provision", "--address", "C0:FF:EE:00:0E:01", "--lock-key-file", lock_key(scratch),
             "--rotation-exponent", "10", "--device-id", "UNIT-1", "--wait", "1", "--json"] + sd
        ],
        "unpair": [["unpair", "--device-id", "UNIT-1"] + sd],
        "pairs": [["pairs"] + sd, ["pairs", "--json"] + sd],
        "replay": [["replay", CAPTURE], ["replay", "--json", CAPTURE]],
        "scan": [["scan", "--duration", "1"] + sd],
        "run": [["run", "--config", config] + sd],
        "status": [["status"], ["status", "--json"]],
        "doctor": [["doctor", "--config", config] + sd],
        "diagnose": [
            ["diagnose", "--export", os.path.join(scratch, "bundle.tar.gz"), "--lines", "5",
             "--config", config] + sd
        ],
        "trip": [["trip", "start", "--trip-id", "t1"], ["trip", "events", "--trip-id", "t1", "-"]],
        "gzone": [
            ["gzone", "status", os.path.join(ROOT, "Tests/Fixtures/gzone/load1")],
            ["gzone", "diff", os.path.join(ROOT, "Tests/Fixtures/gzone/load1"),
             os.path.join(ROOT, "Tests/Fixtures/gzone/load2"), "--json"],
            ["gzone", "refresh"],
        ],
    }


# The commands that read standard input, and how.
STDIN_READERS = [
    ["simulate", "-"],
    ["replay", "-"],
    ["trip", "events", "--trip-id", "t1", "-"],
]

BAD_TEXT = ["Fatal error", "NSCocoaErrorDomain", "Error Domain=", "Swift runtime failure"]


def commands():
    out = subprocess.run([BINARY, "--help"], capture_output=True, text=True, check=True).stdout
    names, inside = [], False
    for line in out.splitlines():
        if line.startswith("COMMANDS:"):
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            names.append(line.split()[0])
    if len(names) < 10:
        sys.exit(f"check-io-boundaries: could not read the command list from --help:\n{out}")
    return names


def run(argv, env, stdin="devnull", stdout="devnull"):
    """Runs the binary; returns (status, stderr). stdin: devnull | closed | dir.
    stdout: devnull | full | closed-pipe | closed."""
    closers = []
    stdin_arg = subprocess.DEVNULL
    if stdin == "dir":
        stdin_arg = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        closers.append(stdin_arg)
    stdout_arg = subprocess.DEVNULL
    if stdout == "full":
        stdout_arg = os.open("/dev/full", os.O_WRONLY)
        closers.append(stdout_arg)
    elif stdout == "closed-pipe":
        read_end, write_end = os.pipe()
        os.close(read_end)
        stdout_arg = write_end
        closers.append(write_end)

    def preexec():
        if stdin == "closed":
            os.close(0)
        if stdout == "closed":
            os.close(1)

    try:
        proc = subprocess.run(
            [BINARY] + argv, stdin=stdin_arg, stdout=stdout_arg, stderr=subprocess.PIPE, env=env,
            timeout=TIMEOUT, preexec_fn=preexec)
        status, err = proc.returncode, proc.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        status, err = "timeout", (e.stderr or b"").decode(errors="replace")
    finally:
        for fd in closers:
            os.close(fd)
    return status, err


def main():
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"check-io-boundaries: {BINARY} is missing; run 'make build'")
    failures = []
    runs = 0
    with tempfile.TemporaryDirectory(prefix="bb-io-") as scratch:
        state = os.path.join(scratch, "state")
        env = dict(os.environ)
        env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + os.path.join(scratch, "no-bus-here")
        env.pop("BEACONBRIDGE_STATE_DIR", None)
        table = invocations(state, scratch)
        names = commands()
        missing = [n for n in names if n not in table]
        if missing:
            sys.exit(f"check-io-boundaries: no invocation for {', '.join(missing)}: add one to INVOCATIONS")

        def check(label, argv, **streams):
            nonlocal runs
            runs += 1
            status, err = run(argv, env, **streams)
            what = f"{label}: beaconbridge {' '.join(argv)}"
            if status == "timeout":
                failures.append(f"{what}: did not end within {TIMEOUT} s")
            elif status == 0:
                failures.append(f"{what}: exit 0, though its output could not be written")
            elif status < 0 or status > 128:
                failures.append(f"{what}: killed by a signal (status {status}); stderr: {err.strip()[-300:]}")
            elif not err.strip():
                failures.append(f"{what}: exit {status} without a word on stderr")
            elif any(bad in err for bad in BAD_TEXT):
                failures.append(f"{what}: stderr is not a plain sentence: {err.strip()[-300:]}")
            return status, err

        for name in names:
            check("--help to /dev/full", [name, "--help"], stdout="full")
            check("--help to a closed pipe", [name, "--help"], stdout="closed-pipe")
            for argv in table[name]:
                check("stdin closed, stdout /dev/full", argv, stdin="closed", stdout="full")
                check("stdout /dev/full", argv, stdout="full")
                check("stdin closed, stdout a closed pipe", argv, stdin="closed", stdout="closed-pipe")
                check("stdout closed", argv, stdout="closed")
        for argv in STDIN_READERS:
            for stdin, words in [("closed", "it is closed"), ("dir", "is a directory")]:
                status, err = check(f"stdin {stdin}", argv, stdin=stdin)
                if status == 1 and words not in err:
                    failures.append(f"stdin {stdin}: beaconbridge {' '.join(argv)}: stderr does not say "
                                    f"'{words}': {err.strip()[-300:]}")
    if failures:
        print("check-io-boundaries: FAILED", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)
    print(f"check-io-boundaries: {len(names)} commands, {runs} runs: every one failed cleanly "
          "(exit 1-128, one line on stderr, within the time limit)")


if __name__ == "__main__":
    main()
