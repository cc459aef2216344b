#!/usr/bin/env python3
"""The functions the daemon runs, for the linker to put side by side (docs/PERFORMANCE.md, "Where
the daemon's memory goes": the code layout).

    Benchmarks/code-order.py --daemon .build/release/beaconbridged --cli .build/release/beaconbridge \\
        --emitter .build/bench/bench-emitter --out packaging/link/hot-functions.txt
    Benchmarks/code-order.py --check .build/release/beaconbridged

Runs `make bench`'s daemon phase (Benchmarks/run.py --only daemon, shortened: start-up, idle,
200 beacons at 10 Hz, 1,000 beacons in range, a flood of random addresses, a trip uploaded to a
fake backend, SIGTERM) with every daemon under callgrind, and writes the mangled names of the
functions of the daemon's executable that ran, one per line, sorted. `make code-order` runs it;
`make release` hands the file to lld (--symbol-ordering-file, the Makefile's DAEMON_LINK). lld
warns about each name the executable no longer has, and a function missing from the list still
works: it is only laid out among the cold code. `--check EXECUTABLE` (run by `make release` and
`make test-system-files`) fails when the list is stale (under 90% of its names are in the
executable) or was not applied (listed functions make under 90% of the first 256 KB of code; an
unordered link: about 6%). Standard library only.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def functions_run(profile, executable):
    """The functions of `executable` that have a cost in one callgrind output file. Names are
    compressed: `fn=(id) name` (or `cfn=`) names an id once, later lines give the id alone."""
    objects, names, ran = {}, {}, set()
    current = None
    with open(profile, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind, number, name = m.groups()
                if name:
                    objects[number] = name
                if kind == "ob":
                    current = objects.get(number)
                continue
            m = re.match(r"^(c?)fn=\((\d+)\)(?: (.*))?$", line)
            if m:
                called, number, name = m.groups()
                if name:
                    names[number] = name
                if not called and current and os.path.realpath(current) == executable:
                    name = names.get(number)
                    if name and not name.startswith("0x"):
                        # callgrind names a recursive call's level `name'2`: the symbol is `name`.
                        ran.add(re.sub(r"'\d+$", "", name))
    return ran


LIST = os.path.join(os.path.dirname(HERE), "packaging", "link", "hot-functions.txt")


def check(executable, listed_path=LIST):
    """Whether `executable` was linked with a current list: returns (ok, message)."""
    listed = set(line for line in open(listed_path).read().split("\n") if line)
    symbols = subprocess.run(["nm", "-n", "-S", "--defined-only", executable], capture_output=True,
                             text=True, check=True)
    functions = []
    for line in symbols.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            functions.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    # Distinct names: a local symbol's name can be defined more than once (one per object file).
    present = len(listed & {name for _, _, name in functions})
    start = functions[0][0] if functions else 0
    head = [(size, name) for address, size, name in functions if address < start + 256 * 1024]
    share = sum(size for size, name in head if name in listed) / max(1, sum(size for size, _ in head))
    message = (f"{present} of the {len(listed)} listed functions are in {executable}; they make "
               f"{share:.0%} of the bytes of the first 256 KB of its code")
    if present < 0.9 * len(listed):
        return False, (message + f": the list is stale (fewer than 90% of its functions are still in the "
                       f"daemon), so the release link no longer lays out the code the daemon runs; "
                       f"run make code-order and commit {os.path.relpath(listed_path, os.path.dirname(HERE))}")
    if share < 0.9:
        return False, message + ": the link did not lay them out first (the Makefile's DAEMON_LINK)"
    return True, message


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        ok, message = check(sys.argv[2])
        print(("code-order: " if ok else "code-order: FAIL: ") + message)
        raise SystemExit(0 if ok else 1)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--daemon", required=True, help="the release-built beaconbridged")
    p.add_argument("--cli", required=True, help="the release-built beaconbridge (the bench's trip commands)")
    p.add_argument("--emitter", required=True, help="Benchmarks/emitter.c, built")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    daemon = os.path.realpath(args.daemon)
    work = tempfile.mkdtemp(prefix="beaconbridge-code-order-")
    profiles = os.path.join(work, "profiles")
    os.mkdir(profiles)
    # run.py starts `BEACONBRIDGE run …` and `BEACONBRIDGE trip …`: the daemon under callgrind,
    # the CLI as it is.
    wrapper = os.path.join(work, "beaconbridge")
    with open(wrapper, "w") as f:
        f.write(f"""#!/bin/sh
if [ "$1" = run ]; then
  shift
  # Under valgrind, /proc/self/exe is valgrind: the HTTP children run from the file itself.
  export BEACONBRIDGE_TRANSFER_EXECUTABLE={daemon}
  exec valgrind --tool=callgrind --demangle=no --dump-line=no --dump-instr=no \\
    --callgrind-out-file={profiles}/callgrind.%p {daemon} "$@"
fi
exec {os.path.realpath(args.cli)} "$@"
""")
    os.chmod(wrapper, 0o755)
    subprocess.run(
        [sys.executable, os.path.join(HERE, "run.py"), "--beaconbridge", wrapper, "--bench", "/bin/false",
         "--emitter", args.emitter, "--python", sys.executable, "--bleak-script", os.devnull,
         "--out", os.path.join(work, "report.md"), "--repeats", "1", "--only", "daemon",
         "--idle-seconds", "3", "--flood", "2000", "--load-windows", "1"],
        check=True, stdout=subprocess.DEVNULL)
    ran = set()
    files = sorted(os.listdir(profiles))
    for name in files:
        ran |= functions_run(os.path.join(profiles, name), daemon)
    if len(files) < 2 or len(ran) < 500:
        raise SystemExit(f"code-order: {len(files)} profile(s), {len(ran)} functions: the daemon did not run")
    with open(args.out, "w") as f:
        f.write("".join(name + "\n" for name in sorted(ran)))
    print(f"code-order: {len(ran)} functions from {len(files)} daemon runs -> {args.out}")


if __name__ == "__main__":
    main()
