#!/usr/bin/env python3
"""Rebuilds what a disk holds after a power cut, from a directory as it was when a process
started (--base) and the log Tests/PowerCut/cutlog.c wrote while the process ran (--log), into
--out. Then checks the SQLite store there.

The model is that of SQLite's own crash tests (src/test6.c): what was synced is on the disk;
each write since its file's last sync may have reached the disk or not, in whole 512-byte
sectors, in any order, and a sector being written at the cut may be garbled. Creations, renames
and unlinks since the directory's last sync reach the disk as a prefix of the order they were
made in. --seed chooses the fate; the same inputs and seed give the same disk.

Prints one JSON line: {"integrity": "ok", "missing": [...], "unsynced": N, "kept": N, "torn": N,
"fleet": {...}} where `missing` lists each --find text (a batch or pairing the client saw
acknowledged) found neither in the store's dump nor in --delivered, and `fleet` is what the store
holds of the fleet's desired document: its version and settings (null when none was applied) and
the device IDs of the pairings by identity and by key, sorted; `fleet` is null when the store has
no such tables yet."""
import argparse
import json
import os
import random
import shutil
import sqlite3
import struct
import sys

SECTOR = 512


class Inode:
    def __init__(self, data=b""):
        self.durable = bytearray(data)
        self.pending = []  # ("W", offset, bytes) or ("T", length)

    def sync(self):
        for op in self.pending:
            apply(self.durable, op)
        self.pending = []


def apply(data, op):
    if op[0] == "W":
        _, offset, chunk = op
        if len(data) < offset:
            data.extend(b"\0" * (offset - len(data)))
        data[offset:offset + len(chunk)] = chunk
    else:
        del data[op[1]:]
        if len(data) < op[1]:
            data.extend(b"\0" * (op[1] - len(data)))


def read_log(path):
    # No log: the process was cut before it opened a file, so it wrote nothing.
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        raw = f.read()
    i = 0
    while i < len(raw):
        if i + 5 > len(raw):
            raise SystemExit(f"replay.py: the log {path} ends inside a record at byte {i}")
        op = chr(raw[i])
        (n,) = struct.unpack_from("<I", raw, i + 1)
        name = raw[i + 5:i + 5 + n].decode()
        offset, length = struct.unpack_from("<QQ", raw, i + 5 + n)
        i += 5 + n + 16
        data = b""
        if op in "WR":
            data = raw[i:i + length]
            i += length
        yield op, name, offset, length, data


def cut(base, log, seed):
    """The directory's files after the cut, as {name: bytes}, and counts of what was decided."""
    rng = random.Random(seed)
    inodes = {}
    live = {}  # name -> inode id, as the process saw it
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                inodes[name] = Inode(f.read())
            live[name] = name
    durable_names = dict(live)
    pending_names = []  # namespace operations since the directory's last sync
    serial = 0
    for op, name, offset, length, data in read_log(log):
        if op == "C":
            if name not in live or length == 1:
                if name in live and length == 1:
                    inodes[live[name]].pending.append(("T", 0))
                else:
                    serial += 1
                    ident = f"{name}#{serial}"
                    inodes[ident] = Inode()
                    live[name] = ident
                    pending_names.append(("link", name, ident))
        elif op == "W" and name in live:
            inodes[live[name]].pending.append(("W", offset, data))
        elif op == "T" and name in live:
            inodes[live[name]].pending.append(("T", length))
        elif op == "S" and name in live:
            inodes[live[name]].sync()
        elif op == "D":
            for action in pending_names:
                do_namespace(durable_names, action)
            pending_names = []
        elif op == "R" and name in live:
            target = data.decode()
            live[target] = live.pop(name)
            pending_names.append(("rename", name, target))
        elif op == "U" and name in live:
            live.pop(name)
            pending_names.append(("unlink", name, None))
    # The cut.
    counts = {"unsynced": 0, "kept": 0, "torn": 0}
    for action in pending_names[:rng.randint(0, len(pending_names))]:
        do_namespace(durable_names, action)
    files = {}
    for name, ident in durable_names.items():
        inode = inodes[ident]
        data = inode.durable
        mode = rng.choice(["none", "all", "prefix", "sectors"])
        pieces = []
        for op in inode.pending:
            if op[0] == "T":
                pieces.append(op)
                continue
            _, offset, chunk = op
            start = offset
            while start < offset + len(chunk):
                end = min(offset + len(chunk), (start // SECTOR + 1) * SECTOR)
                pieces.append(("W", start, chunk[start - offset:end - offset]))
                start = end
        counts["unsynced"] += len(pieces)
        keep = {
            "none": lambda k: False,
            "all": lambda k: True,
            "prefix": (lambda limit: lambda k: k < limit)(rng.randint(0, len(pieces))),
            "sectors": lambda k: rng.random() < 0.5,
        }[mode]
        kept = [(k, piece) for k, piece in enumerate(pieces) if keep(k)]
        if kept and rng.random() < 0.25:
            # The sector under the head when the power went: garbled.
            k, piece = kept[-1] if mode == "prefix" else rng.choice(kept)
            if piece[0] == "W":
                garbled = bytes(rng.getrandbits(8) for _ in piece[2])
                kept[kept.index((k, piece))] = (k, ("W", piece[1], garbled))
                counts["torn"] += 1
        counts["kept"] += len(kept)
        for _, piece in kept:
            apply(data, piece)
        files[name] = bytes(data)
    return files, counts


def do_namespace(names, action):
    kind, name, other = action
    if kind == "link":
        names[name] = other
    elif kind == "rename":
        if name in names:
            names[other] = names.pop(name)
    elif kind == "unlink":
        names.pop(name, None)


def fleet(db):
    try:
        applied = db.execute("SELECT version, settings FROM fleet_applied WHERE id = 1").fetchone()
        return {
            "version": applied[0] if applied else None,
            "settings": applied[1] if applied else None,
            "identity": sorted(row[0] for row in db.execute("SELECT device_id FROM pairings")),
            "keys": sorted(row[0] for row in db.execute("SELECT device_id FROM key_pairings")),
        }
    except sqlite3.OperationalError:
        # A store cut before its schema was all written.
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the directory as it was when the process started")
    parser.add_argument("--log", required=True, help="the log cutlog.so wrote")
    parser.add_argument("--out", required=True, help="where to write the directory after the cut")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--store", default="beaconbridge.sqlite", help="the SQLite file to check")
    parser.add_argument("--find", action="append", default=[], help="a text the store must hold (repeatable)")
    parser.add_argument("--delivered", help="a file of texts already delivered, one a line")
    args = parser.parse_args()

    files, counts = cut(args.base, args.log, args.seed)
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    for name in os.listdir(args.base):
        path = os.path.join(args.base, name)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
    for name, data in files.items():
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
        shutil.copymode(os.path.join(args.base, name), os.path.join(args.out, name)) if os.path.exists(
            os.path.join(args.base, name)) else os.chmod(os.path.join(args.out, name), 0o600)

    result = dict(counts)
    store = os.path.join(args.out, args.store)
    dump = ""
    if os.path.exists(store):
        # Check a copy: opening runs WAL recovery, which is the daemon's to do on the real files.
        check = args.out + ".check"
        shutil.rmtree(check, ignore_errors=True)
        shutil.copytree(args.out, check)
        try:
            db = sqlite3.connect(os.path.join(check, args.store))
            result["integrity"] = "; ".join(row[0] for row in db.execute("PRAGMA integrity_check"))
            dump = "\n".join(db.iterdump())
            result["fleet"] = fleet(db)
            db.close()
        except sqlite3.DatabaseError as error:
            result["integrity"] = f"cannot be read: {error}"
        shutil.rmtree(check, ignore_errors=True)
    else:
        result["integrity"] = "no store"
    delivered = ""
    if args.delivered and os.path.exists(args.delivered):
        with open(args.delivered, encoding="utf-8") as f:
            delivered = f.read()
    result["missing"] = [text for text in args.find if text not in dump and text not in delivered]
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
