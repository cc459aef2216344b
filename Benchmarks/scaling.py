#!/usr/bin/env python3
"""`make bench-scaling`: four times the input costs at most five times the work.

Each table the core keeps has a bound in work as well as in size: a step must not scan every
beacon or every open trip, and a batch must cost in proportion to its events. Seconds on a shared
machine swing too much to tell linear from quadratic reliably; instructions do not (callgrind
counts them, whatever else the machine does), so this counts instructions, as `make bench-check`
does (Benchmarks/instructions.py).

For each mode, `BeaconBench --scaling MODE N` runs `countedScaling` over an input of size N, and
callgrind counts the instructions inside it only (`--toggle-collect`). The mode passes when
instructions(4N) / instructions(N) <= --limit (5): linear work gives 4, n log n a little more,
and a scan per step (quadratic) 16.

- beacons: N beacons in range, each sighted 8 times round-robin, the next deadline asked for and
  deadlines ticked after every advertisement (as `simulate` does between scenario entries);
- paired:  the same with each beacon paired by its identity (N pairings, and one of the whole
  UUID): finding a sighting's pairing must not scan them all;
- departed: N paired beacons each heard 8 times in a row and then gone, deadlines stepped after
  every advertisement: the departed watched for silence grow to N, and the next silence must
  not be found by a scan over them;
- trips:   N trips started and left open, the next deadline asked for after every start, then
  N advertisements with a deadline step each while they stay open, then every trip ended;
- batch:   one trip event batch of N events: decoded from its JSON text, taken by the pipeline
  and tagged, and written out as the upload body's events;
- outbox:  N batches waiting in the daemon's store (SQLite, its `queue` table), drained by the
  bridge: read a window at a time through an index, posted, and deleted. The drain runs on the
  concurrency pool, which `--toggle-collect` cannot follow, so the whole process is counted and
  the same run without the drain (`outbox-filled`) is subtracted.

    Benchmarks/scaling.py --bench .build/release/BeaconBench [--mode beacons] [--limit 5]
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

# Sizes chosen so that the quadratic cost a scan per step would have shows plainly (16 times)
# and the whole run stays well under two minutes under callgrind.
SIZES = {"beacons": 1_000, "paired": 1_000, "departed": 1_000, "trips": 1_000, "batch": 2_000, "outbox": 1_000}
# Modes counted as the whole process less a run without the work (see "outbox" above).
SUBTRACTED = {"outbox": "outbox-filled"}


def count(bench, mode, n, work):
    if mode in SUBTRACTED:
        whole, out = count_run(bench, mode, n, work, toggle=False)
        without, _ = count_run(bench, SUBTRACTED[mode], n, work, toggle=False)
        return whole - without, out
    return count_run(bench, mode, n, work, toggle=True)


def count_run(bench, mode, n, work, toggle):
    out = os.path.join(work, f"scaling-{mode}-{n}.cg")
    return bench_common.count([bench, "--scaling", mode, str(n)], out, "countedScaling" if toggle else None)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench", required=True)
    p.add_argument("--mode", action="append", choices=sorted(SIZES), help="one mode (repeatable); all by default")
    p.add_argument("--limit", type=float, default=5.0, help="the largest ratio allowed for 4 times the input")
    p.add_argument("--size", type=int, help="N instead of each mode's own")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="beaconbridge-bench-scaling-")
    failed = False
    for mode in args.mode or sorted(SIZES):
        n = args.size or SIZES[mode]
        small, small_out = count(args.bench, mode, n, work)
        large, large_out = count(args.bench, mode, 4 * n, work)
        ratio = large / small
        verdict = "ok" if ratio <= args.limit else "SUPERLINEAR"
        failed |= ratio > args.limit
        print(f"{verdict:11} {mode}: {small} instructions at n={n}, {large} at 4n={4 * n}: "
              f"x{ratio:.2f} (limit x{args.limit:g}) [{small_out}] [{large_out}]", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
