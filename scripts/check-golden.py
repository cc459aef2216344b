#!/usr/bin/env python3
"""The CLI's event outputs against the golden files in Tests/Golden/cli: `simulate` on every
scenario, and `replay` (text and JSON lines, with and without a pairing) of Tests/Golden's
capture. Each output must be byte for byte its file, so a change to what a box prints is a
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


def cases():
    """(golden file name, arguments after the binary), paths relative to the repository."""
    scenarios = sorted(f for f in os.listdir(os.path.join(ROOT, "Tests", "Scenarios")) if f.endswith(".json"))
    for name in scenarios:
        yield f"simulate-{name[:-5]}.jsonl", ["simulate", f"Tests/Scenarios/{name}"]
    capture = "Tests/Golden/drive.btsnoop"
    yield "replay-drive.txt", ["replay", "--adapter", "hci1", capture]
    yield "replay-drive.jsonl", ["replay", "--json", "--adapter", "hci1", capture]
    yield "replay-drive-paired.txt", ["replay", "--adapter", "hci1", "--pair", VAN, capture]
    yield "replay-drive-paired.jsonl", ["replay", "--json", "--adapter", "hci1", "--pair", VAN, capture]
    yield "replay-drive-first-controller.jsonl", ["replay", "--json", capture]


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
    for name, argv in cases():
        count += 1
        run = subprocess.run(runner + [binary] + argv, cwd=ROOT, capture_output=True, timeout=600)
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
