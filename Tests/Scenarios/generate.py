#!/usr/bin/env python3
"""Writes the scenario files in this folder. Deterministic: the same seeds always give the same
files. Run it again after changing a scenario, and commit the JSON it writes.

    python3 Tests/Scenarios/generate.py [OUTDIR]
"""
import json
import os
import random
import sys

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
# The EIDs and RPA hashes come from the crypto oracle (written from the specifications, never from
# the code under test): Tests/Crypto/oracle.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Crypto"))
import oracle  # noqa: E402
FLEET = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"
OTHER = "FDA50693-A4E2-4FB1-AFCF-C6EB07647825"
VAN7 = (FLEET, 1, 7)
VAN9 = (FLEET, 1, 9)
STRANGER = (OTHER, 100, 1)
PAIR7 = {"uuid": FLEET, "major": 1, "minor": 7, "deviceId": "UNIT-0042", "label": "van 7"}
PAIR9 = {"uuid": FLEET, "major": 1, "minor": 9, "deviceId": "UNIT-0099", "label": "van 9"}


def ibeacon_hex(identity, power=-59):
    uuid, major, minor = identity
    return "0215" + uuid.replace("-", "") + f"{major:04X}{minor:04X}{power & 0xFF:02X}"


def beacon(rng, address, identity, rssi, start, end, interval=1.0, loss=0.0, noise=3):
    events = []
    steps = int(round((end - start) / interval))
    for i in range(steps + 1):
        t = round(start + i * interval, 3)
        lost = rng.random() < loss
        wobble = rng.uniform(-noise, noise)
        if lost:
            continue
        value = rssi(t) if callable(rssi) else rssi
        events.append({"at": t, "advertisement": {
            "address": address, "rssi": int(round(value + wobble)),
            "manufacturerData": [{"companyId": 76, "hex": ibeacon_hex(identity)}]}})
    return events


def tlm_hex(millivolts, celsius, count, uptime):
    """Eddystone-TLM version 0x00 (Eddystone-TLM specification): battery mV, temperature 8.8
    fixed point, advertising PDU count, uptime in 0.1 s units; all big-endian."""
    temp = int(round(celsius * 256)) & 0xFFFF
    return f"2000{millivolts:04X}{temp:04X}{count:08X}{int(round(uptime * 10)):08X}"


def tlm_beacon(address, start, end, battery, uptime, celsius=21.5, interval=10.0, offset=0.5):
    """An Eddystone-TLM frame every `interval` s from `address` (interleaved with its identity
    frames, as Kontakt, Minew, Estimote and Ruuvi beacons do). `battery(t)` and `uptime(t)` give the
    values at time t."""
    events = []
    t = start + offset
    while t <= end:
        up = uptime(t)
        events.append({"at": round(t, 3), "advertisement": {
            "address": address, "rssi": -64,
            "serviceData": [{"uuid": "feaa", "hex": tlm_hex(battery(t), celsius, int(up * 10), up)}]}})
        t += interval
    return events


# Keys of the authentication scenarios: fixed, not secret (test data).
EID_KEY = bytes.fromhex("e2c56db5dffb48d2b060d0f5a71096e0")
OTHER_KEY = bytes.fromhex("0102030405060708090a0b0c0d0e0f10")
IRK = oracle.SPEC_IRK  # the Core spec's sample IRK


def eid_pairing(key, k, clock, device, label=None):
    p = {"eid": {"identityKey": key.hex(), "rotationExponent": k, "beaconClock": clock}, "deviceId": device}
    if label:
        p["label"] = label
    return p


def eid_hex(key, k, clock, power=-21):
    """Raw AD structures of an Eddystone-EID beacon: flags, the 0xFEAA service UUID, and its
    service data (frame type 0x30, the ranging byte, the 8-byte EID the oracle computes)."""
    eid = oracle.eid(key, k, clock & 0xFFFFFFFF)
    return "020106" + "0303AAFE" + "0D16AAFE30" + f"{power & 0xFF:02X}" + eid.hex().upper()


def eid_beacon(rng, address, key, k, clock0, rssi, start, end, interval=1.0, loss=0.0, noise=3):
    """An EID beacon whose clock reads clock0 + t at scenario time t."""
    events = []
    steps = int(round((end - start) / interval))
    for i in range(steps + 1):
        t = round(start + i * interval, 3)
        if rng.random() < loss:
            continue
        events.append({"at": t, "advertisement": {
            "address": address, "rssi": int(round(rssi + rng.uniform(-noise, noise))),
            "rawHex": eid_hex(key, k, clock0 + int(t))}})
    return events


def rpa(irk, prand):
    """A resolvable private address: prand (top two bits 01) then ah(IRK, prand), Core Vol 6
    Part B 1.3.2.2 and Vol 3 Part H 2.2.2."""
    prand = bytes([(prand[0] & 0x3F) | 0x40]) + prand[1:]
    address = prand + oracle.ah(irk, prand)
    return ":".join(f"{b:02X}" for b in address)


def rpa_device(rng, address, rssi, start, end, interval=1.0):
    """A device advertising only flags and a name from `address`: no beacon frame at all."""
    events = []
    steps = int(round((end - start) / interval))
    for i in range(steps + 1):
        t = round(start + i * interval, 3)
        events.append({"at": t, "advertisement": {
            "address": address, "rssi": int(round(rssi + rng.uniform(-3, 3))), "rawHex": "020106"}})
    return events


def trip(trip_id, start, batches, end):
    out = [{"at": start, "tripStart": {"tripId": trip_id}}]
    for at, types in batches:
        out.append({"at": at, "tripEvents": {"tripId": trip_id, "events": [
            {"type": t, "at": at - 0.5, "speedKmh": 52.5} for t in types]}})
    out.append({"at": end, "tripEnd": {"tripId": trip_id}})
    return out


def write(name, description, pairings, events, config=None, duration=None):
    events = sorted(events, key=lambda e: e["at"])  # stable: same-time events keep their order
    doc = {"description": description}
    if config:
        doc["config"] = config
    doc["pairings"] = pairings
    doc["events"] = events
    if duration is not None:
        doc["duration"] = duration
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    rng = random.Random(40)
    write("lossy-beacon.json",
          "A paired beacon at 1 Hz losing 40% of its packets for 10 minutes: one enter, no exit "
          "until it stops, and it stays the active beacon throughout.",
          [PAIR7],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -66, 0, 600, loss=0.4)
          + trip("t1", 60, [(120, ["braking"]), (300, ["cornering"]), (590, ["speeding"])], 595),
          duration=700)

    rng = random.Random(41)
    write("passing-paired-beacon.json",
          "Another vehicle's paired beacon passes by at trip start, 20 dB stronger for 4 s at 10 Hz; "
          "the in-vehicle beacon stays active and tags the trip.",
          [PAIR7, PAIR9],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -70, 0, 90, loss=0.4)
          + beacon(rng, "C0:FF:EE:00:00:09", VAN9, -50, 28, 32, interval=0.1)
          + trip("t1", 30, [(31, ["braking"]), (60, ["acceleration"])], 85))

    rng = random.Random(42)
    write("late-beacon.json",
          "The trip starts with no beacon; the paired beacon arrives 20 s later and tags the trip, "
          "including the batches posted before it arrived.",
          [PAIR7],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -62, 30, 120)
          + trip("t1", 10, [(15, ["braking"]), (25, ["distractionStart", "distractionEnd"]),
                            (60, ["speeding"])], 110))

    write("no-beacon.json",
          "No beacon at all: the trip is unresolved, its batches are held, and nothing is dropped.",
          [PAIR7],
          trip("t1", 0, [(10, ["braking"]), (40, ["cornering"]), (80, ["hardBump"])], 90))

    rng = random.Random(44)
    write("post-trip.json",
          "Post-trip sending: the paired beacon tags the trip at its start, but its batches are "
          "committed as they arrive and posted, in order, only after the trip ends.",
          [PAIR7],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -60, 0, 100)
          + trip("t1", 20, [(30, ["braking"]), (50, ["cornering"]), (70, ["speeding"])], 90),
          config={"sending": "postTrip"})

    rng = random.Random(43)
    write("unpaired-strong.json",
          "A strong unpaired beacon next to a weak paired one: only the paired one becomes active.",
          [PAIR7],
          beacon(rng, "DE:AD:BE:EF:00:01", STRANGER, -38, 0, 60)
          + beacon(rng, "C0:FF:EE:00:00:07", VAN7, -84, 5, 60)
          + trip("t1", 20, [(30, ["braking"])], 55))

    good = "0201061AFF4C00" + ibeacon_hex(VAN7)
    write("malformed-frames.json",
          "Malformed frames are rejected with a reason; the good ones around them still count. Damaged "
          "AD data keeps the structures before the damage (an Eddystone-UID before an iBeacon cut "
          "short; Core spec Vol 3 Part C 11, BlueZ eir_parse) and reports the damage as a rejected "
          "line (malformedTail), and an EID frame is an ignored kind, not a rejection.",
          [PAIR7],
          [
              {"at": 0.0, "advertisement": {"address": "C0:FF:EE:00:00:07", "rssi": -60, "rawHex": good}},
              {"at": 0.5, "advertisement": {"address": "C0:FF:EE:00:00:66", "rssi": -60,
                                            "rawHex": "0201060303AAFE1716AAFE00E312345678901234678901"
                                                      "0000000000010000" "1AFF4C000215E2C5"}},
              {"at": 1.0, "advertisement": {"address": "C0:FF:EE:00:00:66", "rssi": -60,
                                            "rawHex": "0201060010FF"}},
              {"at": 1.5, "advertisement": {"address": "C0:FF:EE:00:00:66", "rssi": -60,
                                            "manufacturerData": [{"companyId": 76, "hex": "0215E2C56DB5"}]}},
              {"at": 2.0, "advertisement": {"address": "C0:FF:EE:00:00:66", "rssi": -60,
                                            "serviceData": [{"uuid": "feaa", "hex": "3000"}]}},
              {"at": 2.5, "advertisement": {"address": "C0:FF:EE:00:00:07", "rssi": -61, "rawHex": good}},
              {"at": 3.0, "advertisement": {"address": "C0:FF:EE:00:00:07", "rssi": -62, "rawHex": good}},
          ])


    # Beacon health: TLM interleaved with an iBeacon from one address.
    rng = random.Random(44)
    uid_ns, uid_inst = "12345678901234678901", "000000000055"
    uid = {"uuid": "feaa", "hex": "00E3" + uid_ns + uid_inst + "0000"}
    url = {"uuid": "feaa", "hex": "10EB03" + "6578616d706c65".upper() + "07"}  # https://example.com
    eid = {"uuid": "feaa", "hex": "30E34549445F74657374"}
    write("tlm-interleaved.json",
          "A paired iBeacon interleaving Eddystone-TLM (3000 mV, 21.5 C) and an Eddystone-URL from one "
          "address: the TLM and URL are joined to the iBeacon by address. An unpaired Eddystone-UID "
          "whose first TLM comes before its UID links once the UID is heard; an EID frame is an "
          "ignored kind, not a rejection.",
          [PAIR7],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -60, 0, 60)
          + tlm_beacon("C0:FF:EE:00:00:07", 0, 60, lambda t: 3000, lambda t: 3600 + t)
          + [{"at": 5.2, "advertisement": {"address": "C0:FF:EE:00:00:07", "rssi": -60, "serviceData": [url]}}]
          + [{"at": 0.2, "advertisement": {"address": "C0:FF:EE:00:00:55", "rssi": -70,
                                           "serviceData": [{"uuid": "feaa",
                                                            "hex": tlm_hex(2900, 19.0, 500, 50.0)}]}}]
          + [{"at": 0.7 + i, "advertisement": {"address": "C0:FF:EE:00:00:55", "rssi": -70, "serviceData": [uid]}}
             for i in range(0, 30, 2)]
          + [{"at": 7.0, "advertisement": {"address": "7A:11:22:33:44:55", "rssi": -80, "serviceData": [eid]}}]
          + trip("t1", 10, [(20, ["braking"])], 50))

    rng = random.Random(45)
    write("tlm-reboot.json",
          "A paired iBeacon with interleaved TLM whose uptime goes backwards at 60 s (a reboot): one "
          "beaconHealth 'rebooted'. It stops at 120 s; silentAfter 30 makes it 'silent' 30 s after "
          "its last sighting.",
          [PAIR7],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -60, 0, 120)
          + tlm_beacon("C0:FF:EE:00:00:07", 0, 120, lambda t: 3010,
                       lambda t: 7200 + t if t < 60 else t - 60),
          config={"silentAfter": 30}, duration=200)

    rng = random.Random(46)
    write("tlm-low-battery.json",
          "A paired iBeacon whose TLM battery falls 10 mV per frame from 2620 mV: one beaconHealth "
          "'batteryLow' when it first reads below 2500 mV (2490 mV at 130.5 s), none after.",
          [PAIR7],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -60, 0, 200)
          + tlm_beacon("C0:FF:EE:00:00:07", 0, 200, lambda t: 2620 - 10 * int(t // 10),
                       lambda t: 100 + t))


    authentication()


def authentication():
    """Pairings by key (docs/authentication.md): EID and RPA beacons tagging trips, rotation,
    drift, replay, a wrong key, the policy against a cloned plain identity, and the clone of a
    plain identity noticed."""
    e1 = eid_pairing(EID_KEY, 10, 65280, "UNIT-E1", "driver tag")
    rng = random.Random(50)
    write("eid-trip.json",
          "A paired Eddystone-EID beacon (K = 10) tags a trip: every line names it with "
          "authentication 'eid'. Its clock starts 256 s before a temporary-key roll-over, so its "
          "EID changes, with a new temporary key, during the trip.",
          [e1],
          eid_beacon(rng, "C0:FF:EE:00:0E:01", EID_KEY, 10, 65280, -62, 0, 400)
          + trip("t1", 30, [(60, ["braking"]), (300, ["cornering"])], 390))

    rng = random.Random(51)
    write("eid-rotation.json",
          "An EID beacon rotating every 16 s (K = 4) across a temporary-key roll-over (its clock "
          "passes 65536 at 36 s): one beacon throughout, never an exit, never a rejection.",
          [eid_pairing(EID_KEY, 4, 65500, "UNIT-E1")],
          eid_beacon(rng, "C0:FF:EE:00:0E:01", EID_KEY, 4, 65500, -60, 0, 200)
          + trip("t1", 10, [(100, ["braking"])], 190),
          duration=260)

    rng = random.Random(52)
    write("eid-drift.json",
          "Two EID beacons whose clocks drifted from their pairings: one 3000 s ahead, inside the "
          "3600 s tolerance, is resolved and tags the trip; one 7200 s behind, outside it, is "
          "never resolved (its frames are counted as unknown EIDs).",
          [e1, eid_pairing(OTHER_KEY, 10, 500000, "UNIT-E2")],
          eid_beacon(rng, "C0:FF:EE:00:0E:01", EID_KEY, 10, 65280 + 3000, -62, 0, 200)
          + eid_beacon(rng, "C0:FF:EE:00:0E:02", OTHER_KEY, 10, 500000 - 7200, -50, 0, 200)
          + trip("t1", 30, [(60, ["braking"])], 190),
          config={"eidClockTolerance": 3600})

    rng = random.Random(53)
    recorded = eid_beacon(rng, "C0:FF:EE:00:0E:01", EID_KEY, 4, 65280, -62, 0, 100)
    replayed = []
    for t in range(150, 260):
        # An EID recorded at 0-15 s (its first window), played back from another address.
        replayed.append({"at": t, "advertisement": {
            "address": "C0:FF:EE:0B:AD:01", "rssi": -50, "rawHex": eid_hex(EID_KEY, 4, 65280)}})
    write("eid-replay.json",
          "A recording of a paired EID beacon's first window played back after the beacon was "
          "heard in later windows: every replayed frame is a 'rejected' line (eidReplay), and the "
          "trip that starts after the real beacon left stays held.",
          [eid_pairing(EID_KEY, 4, 65280, "UNIT-E1")],
          recorded + replayed + trip("t1", 160, [(170, ["braking"])], 250))

    rng = random.Random(54)
    write("eid-wrong-key.json",
          "An EID beacon whose key is not the pairing's: never resolved, never entered, the trip "
          "stays held.",
          [eid_pairing(OTHER_KEY, 10, 65280, "UNIT-E1")],
          eid_beacon(rng, "C0:FF:EE:00:0E:01", EID_KEY, 10, 65280, -55, 0, 120)
          + trip("t1", 10, [(20, ["braking"])], 110))

    rng = random.Random(55)
    first = rpa(IRK, bytes.fromhex("708194"))
    second = rpa(IRK, bytes.fromhex("4a1c2e"))
    stranger = rpa(OTHER_KEY, bytes.fromhex("55aa01"))
    write("rpa-trip.json",
          f"A device paired by its IRK (the Core spec's sample) advertises from {first}, then "
          f"rotates to {second}: both resolve to the pairing, which tags the trip with "
          f"authentication 'rpa'. A stranger's private address ({stranger}) resolves to nothing.",
          [{"irk": IRK.hex(), "deviceId": "UNIT-R1", "label": "phone key"}],
          rpa_device(rng, first, -60, 0, 60) + rpa_device(rng, second, -60, 61, 200)
          + rpa_device(rng, stranger, -45, 0, 200)
          + trip("t1", 20, [(40, ["braking"]), (150, ["speeding"])], 190))

    rng = random.Random(57)
    etlm = []
    t = 0.5
    while t <= 200:
        clock = 65280 + int(t)
        battery = 2620 - 10 * int(t // 10)
        plain = bytes.fromhex(tlm_hex(battery, 21.5, int(t * 10), 100 + t))[2:]
        frame = oracle.etlm_frame(EID_KEY, 10, clock, int(t * 10).to_bytes(2, "big"), plain)
        etlm.append({"at": round(t, 3), "advertisement": {
            "address": "C0:FF:EE:00:0E:01", "rssi": -64,
            "rawHex": "020106" + "0303AAFE" + "1516AAFE" + frame.hex().upper()}})
        t += 10
    write("eid-etlm.json",
          "An EID beacon interleaving encrypted TLM (AES-EAX with its identity key, the oracle's "
          "frames) whose battery falls 10 mV per frame from 2620 mV: the frames are opened and "
          "linked to the beacon, and one beaconHealth 'batteryLow' for UNIT-E1 follows at 130.5 s.",
          [e1],
          eid_beacon(rng, "C0:FF:EE:00:0E:01", EID_KEY, 10, 65280, -60, 0, 200) + etlm)

    rng = random.Random(56)
    write("policy-clone.json",
          "requireAuthenticated: a clone of the plain iBeacon pairing (in another vehicle, "
          "stronger) is heard from the start and never becomes the active beacon; the trip waits "
          "and is tagged late by the EID beacon that arrives at 25 s.",
          [PAIR7, eid_pairing(EID_KEY, 10, 65280, "UNIT-E1")],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -50, 0, 200)
          + eid_beacon(rng, "C0:FF:EE:00:0E:01", EID_KEY, 10, 65280, -70, 25, 200)
          + trip("t1", 10, [(15, ["braking"]), (100, ["cornering"])], 190),
          config={"requireAuthenticated": "true"})

    rng = random.Random(58)
    write("plain-clone.json",
          "A clone of a paired plain iBeacon (van 7) heard from another address, interleaved with "
          "the real one, from 30.5 s to 90.5 s: one beaconHealth 'possibleClone' naming both "
          "addresses at 51.5 s (its third 10 s window with a return to an address it had left), "
          "and 'cloneCleared' 300 s after the last return (391 s). Van 9 rotates its address once "
          "at 60 s, as a beacon with a resolvable private address does: no clone.",
          [PAIR7, PAIR9],
          beacon(rng, "C0:FF:EE:00:00:07", VAN7, -60, 0, 150)
          + beacon(rng, "DE:AD:BE:EF:00:07", VAN7, -55, 30.5, 90.5)
          + beacon(rng, "5A:00:00:00:09:01", VAN9, -65, 0, 59)
          + beacon(rng, "5A:00:00:00:09:02", VAN9, -65, 60, 150),
          duration=420)

    rng = random.Random(59)
    first = rpa(IRK, bytes.fromhex("708194"))
    second = rpa(IRK, bytes.fromhex("4a1c2e"))
    other = rpa(OTHER_KEY, bytes.fromhex("55aa01"))
    write("rpa-replay.json",
          f"requireAuthenticated, two devices paired by IRK. UNIT-R1 advertises from {first}, then "
          f"rotates to {second} and leaves at 200 s; a copier sends {first} again from 300 s: older "
          f"than a newer address of that device, so every copy is a 'rejected' line (rpaReplay) and "
          f"trip t1 stays held. UNIT-R2 is heard from {other} for 30 s; a copy of it two days later "
          f"(first heard more than rpaMaxAge, 1800 s, before) is refused the same way, and trip t2 "
          f"stays held.",
          [{"irk": IRK.hex(), "deviceId": "UNIT-R1"}, {"irk": OTHER_KEY.hex(), "deviceId": "UNIT-R2"}],
          rpa_device(rng, first, -60, 0, 60) + rpa_device(rng, second, -60, 61, 200)
          + rpa_device(rng, other, -60, 0, 30)
          + rpa_device(rng, first, -50, 300, 400)
          + rpa_device(rng, other, -50, 172_800, 172_900)
          + trip("t1", 350, [(360, ["braking"])], 390)
          + trip("t2", 172_850, [(172_860, ["braking"])], 172_890),
          config={"requireAuthenticated": "true"})


if __name__ == "__main__":
    main()
