#!/usr/bin/env python3
"""The CLI's event outputs against the golden files in Tests/Golden/cli: `simulate` on every
scenario, `replay` (text and JSON lines, with and without a pairing) of Tests/Golden's
capture, and `pairs` (text and JSON) over a store that `pair` writes (by identity, a whole
major, an Eddystone-EID key and an IRK), with no daemon reachable. Each output must be byte for byte its file, so a change to what a box prints is a
change to a checked-in file that a reviewer sees.

    scripts/check-golden.py BIN             # compare; exit 1 naming each output that differs
    scripts/check-golden.py BIN --update    # rewrite the files from BIN
    scripts/check-golden.py BIN --runner 'qemu-aarch64 -L TREE'   # the same outputs from another CPU

The capture itself is checked too: it must be what Tests/Golden/capture.py writes.
"""
import argparse
import difflib
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "Tests", "Golden")
CAPTURE = os.path.join(GOLDEN, "drive.btsnoop")
VAN = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0:1:7=UNIT-0042"


# The pairings `pairs` lists: `pair` runs each in order into a fresh state directory ({state});
# {eid} and {irk} are key files the script writes (0600).
PAIRINGS = [
    ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--major", "1", "--minor", "7",
     "--device-id", "UNIT-0042", "--label", "van 7"],
    ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--major", "2", "--device-id", "UNIT-0099"],
    ["pair", "--eid-key-file", "{eid}", "--rotation-exponent", "10", "--beacon-clock", "0",
     "--device-id", "UNIT-E1", "--label", "eid van"],
    ["pair", "--irk-file", "{irk}", "--device-id", "PHONE-7"],
]


def cases():
    """(golden file name, arguments after the binary), paths relative to the repository; {state}
    is the state directory PAIRINGS were written into."""
    scenarios = sorted(f for f in os.listdir(os.path.join(ROOT, "Tests", "Scenarios")) if f.endswith(".json"))
    for name in scenarios:
        yield f"simulate-{name[:-5]}.jsonl", ["simulate", f"Tests/Scenarios/{name}"]
    capture = "Tests/Golden/drive.btsnoop"
    yield "replay-drive.txt", ["replay", "--adapter", "hci1", capture]
    yield "replay-drive.jsonl", ["replay", "--json", "--adapter", "hci1", capture]
    yield "replay-drive-paired.txt", ["replay", "--adapter", "hci1", "--pair", VAN, capture]
    yield "replay-drive-paired.jsonl", ["replay", "--json", "--adapter", "hci1", "--pair", VAN, capture]
    yield "replay-drive-first-controller.jsonl", ["replay", "--json", capture]
    yield "pairs.txt", ["pairs", "--state-dir", "{state}"]
    yield "pairs.json", ["pairs", "--json", "--state-dir", "{state}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--update", action="store_true", help="rewrite the golden files")
    parser.add_argument("--runner", default="", help="a command that runs the binary (an emulator)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        fresh = os.path.join(tmp, "drive.btsnoop")
        subprocess.run([sys.executable, os.path.join(GOLDEN, "capture.py"), fresh], check=True)
        with open(fresh, "rb") as a, open(CAPTURE, "rb") as b:
            if a.read() != b.read():
                if not args.update:
                    print("Tests/Golden/drive.btsnoop is stale: run scripts/check-golden.py BIN --update", file=sys.stderr)
                    return 1
                with open(CAPTURE, "wb") as out, open(fresh, "rb") as src:
                    out.write(src.read())

    out_dir = os.path.join(GOLDEN, "cli")
    os.makedirs(out_dir, exist_ok=True)
    binary = os.path.abspath(args.binary)
    runner = shlex.split(args.runner)
    failed = []
    count = 0
    # No daemon answers: `pair` and `pairs` use the store in {state}.
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/beaconbridge-golden")
    scratch = tempfile.TemporaryDirectory()
    places = {"state": os.path.join(scratch.name, "state"), "eid": os.path.join(scratch.name, "eid.key"),
              "irk": os.path.join(scratch.name, "irk.key")}
    for key, digits in (("eid", "1a" * 16), ("irk", "2b" * 16)):
        with open(os.open(places[key], os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(digits + "\n")
    for argv in PAIRINGS:
        argv = [a.format(**places) for a in argv] + ["--state-dir", places["state"]]
        run = subprocess.run(runner + [binary] + argv, cwd=ROOT, env=env, capture_output=True, timeout=600)
        if run.returncode != 0:
            print(f"check-golden: {' '.join(argv)}: exit {run.returncode}: {run.stderr.decode(errors='replace')}",
                  file=sys.stderr)
            return 1
    for name, argv in cases():
        count += 1
        argv = [a.format(**places) for a in argv]
        run = subprocess.run(runner + [binary] + argv, cwd=ROOT, env=env, capture_output=True, timeout=600)
        if run.returncode != 0:
            failed.append(f"{name}: exit {run.returncode}: {run.stderr.decode(errors='replace').strip()}")
            continue
        path = os.path.join(out_dir, name)
        if args.update:
            with open(path, "wb") as f:
                f.write(run.stdout)
            continue
        try:
            with open(path, "rb") as f:
                want = f.read()
        except FileNotFoundError:
            failed.append(f"{name}: no golden file (run with --update and commit it)")
            continue
        if run.stdout != want:
            diff = difflib.unified_diff(
                want.decode(errors="replace").splitlines(), run.stdout.decode(errors="replace").splitlines(),
                f"golden/{name}", "output", lineterm="", n=1)
            failed.append(f"{name} differs:\n" + "\n".join(list(diff)[:20]))
    if failed:
        print("\n".join(failed), file=sys.stderr)
        print(f"check-golden: {len(failed)} of {count} outputs differ from Tests/Golden/cli", file=sys.stderr)
        return 1
    print(f"check-golden: {count} outputs {'written' if args.update else 'match their golden files'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
