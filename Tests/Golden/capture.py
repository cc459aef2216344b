#!/usr/bin/env python3
"""Writes Tests/Golden/drive.btsnoop: a btmon capture (datalink 2001, the Linux monitor) of a
short drive, the input of replay's golden outputs (scripts/check-golden.py).

Written from BlueZ's src/shared/btsnoop.h and the Core specification's LE Advertising Report
(Vol 4 Part E 7.7.65.2), not from the project's reader, so that the reader is what is tested.

Two controllers: hci0 hears a stranger only; hci1 hears the van's iBeacon at 1 Hz with a
falling then rising RSSI for 40 s, an AltBeacon, an Eddystone-UID beacon with TLM frames on the
same address, and a damaged frame; the van then falls silent, so its exit is in the output.

    python3 Tests/Golden/capture.py [OUT]
"""
import struct
import sys

EPOCH_OFFSET_US = 0x00DCDDB30F2F8000  # microseconds from 0 AD to 1970
BASE_S = 1_700_000_000


def record(index, opcode, seconds, data):
    time = EPOCH_OFFSET_US + BASE_S * 1_000_000 + round(seconds * 1_000_000)
    return struct.pack(">IIIIQ", len(data), len(data), index << 16 | opcode, 0, time) + data


def address(text):
    return bytes(int(part, 16) for part in reversed(text.split(":")))


def report(entries):
    """An LE Advertising Report event: (address, AD bytes, RSSI), ADV_NONCONN_IND, random."""
    body = bytes([0x02, len(entries)])
    for addr, ad, rssi in entries:
        body += bytes([0x03, 0x01]) + address(addr) + bytes([len(ad)]) + ad + struct.pack("b", rssi)
    return bytes([0x3E, len(body)]) + body


def ad(kind, payload):
    return bytes([len(payload) + 1, kind]) + payload


FLAGS = ad(0x01, b"\x06")


def ibeacon(uuid, major, minor, power=-59):
    body = b"\x4c\x00\x02\x15" + bytes.fromhex(uuid.replace("-", "")) + struct.pack(">HHb", major, minor, power)
    return FLAGS + ad(0xFF, body)


def altbeacon(beacon_id, power=-60):
    body = b"\x18\x01\xbe\xac" + bytes.fromhex(beacon_id) + struct.pack("b", power) + b"\x00"
    return FLAGS + ad(0xFF, body)


def eddystone(frame):
    return FLAGS + ad(0x03, b"\xaa\xfe") + ad(0x16, b"\xaa\xfe" + frame)


def uid(namespace, instance, power=-20):
    return eddystone(b"\x00" + struct.pack("b", power) + bytes.fromhex(namespace + instance) + b"\x00\x00")


def tlm(millivolts, pdus, tenths):
    return eddystone(b"\x20\x00" + struct.pack(">HhII", millivolts, 0x1580, pdus, tenths))


VAN = ("C0:FF:EE:00:00:07", ibeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 7))
OTHER_VAN = ("C0:FF:EE:00:00:09", ibeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 9))
STRANGER = ("DE:AD:BE:EF:00:01", ibeacon("FDA50693-A4E2-4FB1-AFCF-C6EB07647825", 100, 1))
ALT = ("C0:FF:EE:00:00:0A", altbeacon("0102030405060708090a0b0c0d0e0f101112131a"))
EDDY = ("C0:FF:EE:00:00:0E", uid("12121212121212121212", "0000000000e1"))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "Tests/Golden/drive.btsnoop"
    data = b"btsnoop\x00" + struct.pack(">II", 1, 2001)
    # New Index records for hci0 and hci1 (opcode 0).
    data += record(0, 0, 0, bytes(16)) + record(1, 0, 0, bytes(16))
    data += record(0, 3, 1.5, report([(STRANGER[0], STRANGER[1], -40)]))
    for second in range(1, 41):
        rssi = -58 - abs(20 - second) // 2
        entries = [(VAN[0], VAN[1], rssi)]
        if second <= 6:
            entries.append((OTHER_VAN[0], OTHER_VAN[1], -84))
        data += record(1, 3, second, report(entries))
        if second % 5 == 0:
            data += record(1, 3, second + 0.25, report([(ALT[0], ALT[1], -70)]))
            data += record(1, 3, second + 0.5, report([(EDDY[0], EDDY[1], -66)]))
        if second % 10 == 0:
            data += record(1, 3, second + 0.75, report([(EDDY[0], tlm(3000 - second, 256 * second, 100 * second), -67)]))
    # A truncated iBeacon (the damage is reported, not fatal), then the van is gone.
    data += record(1, 3, 41, report([(VAN[0], VAN[1][:-4], -60)]))
    data += record(1, 3, 90, bytes([0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]))
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
