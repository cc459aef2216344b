#!/usr/bin/env python3
"""Which parts of an executable a running process holds in memory (docs/PERFORMANCE.md, "Where
the daemon's memory goes").

    Benchmarks/resident.py PID [EXECUTABLE]

Reads the process's mappings of EXECUTABLE (default /proc/PID/exe) from /proc/PID/maps and, per
page, the present bit of /proc/PID/pagemap (root, or the process's own user). Prints the resident
pages by ELF section (readelf -S), then the resident bytes of .text by module: each resident page
is shared among the symbols it overlaps (nm -n -S), and each symbol is put in the module its
mangled name names (a Swift symbol's module, the standard library for `$ss` and the standard
substitutions `$sS…`, ICU, CoreFoundation, Dispatch and the Swift runtime by their C and C++
names). With --totals, the .text size of each module beside its resident part.
Standard library only; no process is changed.
"""
import argparse
import bisect
import collections
import os
import re
import struct
import subprocess

PAGE = os.sysconf("SC_PAGE_SIZE")


def module(name):
    if name.startswith("$s"):
        rest = name[2:]
        if rest.startswith("s") or re.match(r"S[a-zA-Z]", rest):
            return "Swift standard library"
        m = re.match(r"(\d+)", rest)
        if m:
            return rest[len(m.group(1)):len(m.group(1)) + int(m.group(1))]
        return "Swift (other)"
    if "icu" in name.lower() or re.match(r"_ZN?K?\d*U", name):
        return "ICU"
    if re.match(r"_*CF", name):
        return "CoreFoundation"
    if "dispatch" in name:
        return "Dispatch"
    if name.startswith(("swift_", "_swift", "_ZN5swift", "_ZNK5swift", "_ZN12_GLOBAL__N_1")):
        return "Swift runtime (C, C++)"
    if name.startswith("_Z"):
        return "C++ (other)"
    return "C (other)"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pid", type=int)
    p.add_argument("executable", nargs="?")
    p.add_argument("--totals", action="store_true")
    args = p.parse_args()
    executable = os.path.realpath(args.executable or f"/proc/{args.pid}/exe")
    maps = []
    for line in open(f"/proc/{args.pid}/maps"):
        parts = line.split()
        if len(parts) >= 6 and os.path.realpath(parts[5]) == executable:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            maps.append((lo, hi, int(parts[2], 16)))
    base = min(lo - offset for lo, _, offset in maps if offset == 0)
    resident = []
    with open(f"/proc/{args.pid}/pagemap", "rb") as pagemap:
        for lo, hi, _ in maps:
            pagemap.seek(lo // PAGE * 8)
            data = pagemap.read((hi - lo) // PAGE * 8)
            resident += [lo + i * PAGE - base for i in range((hi - lo) // PAGE)
                         if struct.unpack_from("<Q", data, i * 8)[0] >> 63]
    sections = []
    for line in subprocess.run(["readelf", "-SW", executable], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and int(m.group(2), 16) and int(m.group(3), 16):
            sections.append((int(m.group(2), 16), int(m.group(3), 16), m.group(1)))
    by_section = collections.Counter()
    for page in resident:
        for start, size, name in sections:
            overlap = min(page + PAGE, start + size) - max(page, start)
            if overlap > 0:
                by_section[name] += overlap
    mb = 1 << 20
    print(f"{executable}: {len(resident) * PAGE / mb:.2f} MB resident")
    for name, size in by_section.most_common():
        if size >= 10 * 1024:
            print(f"  {name:30s} {size / mb:6.2f} MB")
    symbols = []
    for line in subprocess.run(["nm", "--defined-only", "-n", "-S", executable],
                               capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            symbols.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    starts = [s[0] for s in symbols]
    text = next((s for s in sections if s[2] == ".text"), None)
    by_module, totals = collections.Counter(), collections.Counter()
    for page in resident:
        if not text or not text[0] <= page < text[0] + text[1]:
            continue
        i, covered = max(0, bisect.bisect_right(starts, page) - 1), 0
        while i < len(symbols) and symbols[i][0] < page + PAGE:
            start, size, name = symbols[i]
            overlap = min(page + PAGE, start + max(size, 1)) - max(page, start)
            if overlap > 0:
                by_module[module(name)] += overlap
                covered += overlap
            i += 1
        by_module["(between symbols)"] += max(0, PAGE - covered)
    for start, size, name in symbols:
        if text and text[0] <= start < text[0] + text[1]:
            totals[module(name)] += size
    print(".text resident by module" + (" (of its size)" if args.totals else "") + ":")
    for name, size in by_module.most_common():
        if size >= 10 * 1024:
            extra = f"  of {totals[name] / mb:5.2f} MB" if args.totals and name in totals else ""
            print(f"  {name:30s} {size / mb:6.2f} MB{extra}")


if __name__ == "__main__":
    main()
