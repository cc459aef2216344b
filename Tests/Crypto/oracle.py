#!/usr/bin/env python3
"""The independent oracle for BeaconCrypto: writes vectors.json in this folder from the
specifications alone, with Python's `cryptography` package (Debian's python3-cryptography) as the
AES. Nothing here comes from the Swift code under test.

    python3 Tests/Crypto/oracle.py [OUTDIR]

Deterministic: the keys come from a seeded generator, so the same run always writes the same
file (`make crypto-vectors` fails when the committed one is stale).

Sources, each implemented below from its text:
- AES-128: FIPS-197 (appendix C.1 is checked before anything is written).
- AES-EAX: Bellare, Rogaway, Wagner, "The EAX Mode of Operation" (2004): OMAC (= CMAC) over
  [t]_n || M, CTR, tag = N ^ H ^ C, truncated. The paper's test vectors are checked first.
- Eddystone-EID: google/eddystone eddystone-eid/eid-computation.md (temporary key, then EID).
- Encrypted TLM: google/eddystone eddystone-tlm/tlm-encrypted.md (48-bit nonce = the EID's
  truncated time, big-endian, then the 16-bit salt; AES-EAX with the identity key, no header,
  16-bit MIC; the 12 plain TLM bytes after the version byte).
- ah: Bluetooth Core Vol 3 Part H 2.2.2: ah(k, r) = e(k, 0^104 || r) mod 2^24, MSB first; the
  sample data (IRK ec0234a357c8ad05341010a60a397d9b, prand 708194, hash 0dfbaa) is checked first.

The resolver scenarios encode the rules of docs/authentication.md as a small reference model
(`Model` below): the tolerance around the tracked clock, the replay rule, the tracking of the
beacon's clock as heard.
"""
import json
import os
import random
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.cmac import CMAC

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
RNG = random.Random(29)


def key16():
    return bytes(RNG.getrandbits(8) for _ in range(16))


def aes(key, block):
    assert len(key) == 16 and len(block) == 16
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


# --- AES-EAX, from the paper ---------------------------------------------------------------------
def omac(key, t, message):
    mac = CMAC(algorithms.AES(key))
    mac.update(bytes(15) + bytes([t]) + message)
    return mac.finalize()


def eax_encrypt(key, nonce, header, message, tag_length):
    n = omac(key, 0, nonce)
    h = omac(key, 1, header)
    ctr = Cipher(algorithms.AES(key), modes.CTR(n)).encryptor()
    c = ctr.update(message) + ctr.finalize()
    tag = bytes(a ^ b ^ d for a, b, d in zip(n, omac(key, 2, c), h))
    return c, tag[:tag_length]


def eax_decrypt(key, nonce, header, ciphertext, tag):
    n = omac(key, 0, nonce)
    h = omac(key, 1, header)
    full = bytes(a ^ b ^ d for a, b, d in zip(n, omac(key, 2, ciphertext), h))
    if full[: len(tag)] != tag:
        return None
    ctr = Cipher(algorithms.AES(key), modes.CTR(n)).decryptor()
    return ctr.update(ciphertext) + ctr.finalize()


# --- Eddystone-EID ---------------------------------------------------------------------------------
def temporary_key(identity_key, clock):
    block = bytes(11) + b"\xff" + bytes(2) + bytes([(clock >> 24) & 0xFF, (clock >> 16) & 0xFF])
    return aes(identity_key, block)


def eid(identity_key, k, clock):
    truncated = (clock >> k) << k
    block = bytes(11) + bytes([k]) + truncated.to_bytes(4, "big")
    return aes(temporary_key(identity_key, clock), block)[:8]


def etlm_frame(identity_key, k, clock, salt, plain_tlm):
    nonce = ((clock >> k) << k).to_bytes(4, "big") + salt
    c, mic = eax_encrypt(identity_key, nonce, b"", plain_tlm, 2)
    return bytes([0x20, 0x01]) + c + salt + mic


# --- ah ------------------------------------------------------------------------------------------
def ah(irk, prand):
    return aes(irk, bytes(13) + prand)[13:]


# --- Self-checks against the specifications' own data ------------------------------------------
FIPS_KEY = bytes(range(16))
FIPS_PLAIN = bytes.fromhex("00112233445566778899aabbccddeeff")
FIPS_CIPHER = bytes.fromhex("69c4e0d86a7b0430d8cdb78070b4c55a")
assert aes(FIPS_KEY, FIPS_PLAIN) == FIPS_CIPHER, "FIPS-197 C.1"

EAX_PAPER = [
    # key, nonce, header, message, ciphertext || 16-byte tag
    ("233952DEE4D5ED5F9B9C6D6FF80FF478", "62EC67F9C3A4A407FCB2A8C49031A8B3", "6BFB914FD07EAE6B", "",
     "E037830E8389F27B025A2D6527E79D01"),
    ("91945D3F4DCBEE0BF45EF52255F095A4", "BECAF043B0A23D843194BA972C66DEBD", "FA3BFD4806EB53FA", "F7FB",
     "19DD5C4C9331049D0BDAB0277408F67967E5"),
]
for k, n, h, m, expected in EAX_PAPER:
    c, t = eax_encrypt(bytes.fromhex(k), bytes.fromhex(n), bytes.fromhex(h), bytes.fromhex(m), 16)
    assert (c + t).hex().upper() == expected, "EAX paper vector"

SPEC_IRK = bytes.fromhex("ec0234a357c8ad05341010a60a397d9b")
SPEC_PRAND = bytes.fromhex("708194")
assert aes(SPEC_IRK, bytes(13) + SPEC_PRAND).hex() == "159d5fb72ebe2311a48c1bdcc40dfbaa"
assert ah(SPEC_IRK, SPEC_PRAND).hex() == "0dfbaa", "Core Vol 3 Part H ah sample data"


# --- The resolver's rules, as a reference model ----------------------------------------------------
class Model:
    """docs/authentication.md's rules: a window is within the tolerance when one second of it is
    within `tolerance` of the expected clock (box time + the tracked offset); an EID from a window
    older than the newest window heard is a replay; a resolved window moves the offset as little
    as makes the expected clock fall inside that window."""

    def __init__(self, pairings, tolerance):
        self.pairings = [dict(p, offset=p["beaconClock"] - p["boxTime"], heard=None) for p in pairings]
        self.tolerance = tolerance

    def resolve(self, value, box_time):
        for index, p in enumerate(self.pairings):
            k = p["rotationExponent"]
            expected = box_time + p["offset"]
            low = max(0, expected - self.tolerance) >> k
            high = min(0xFFFFFFFF, expected + self.tolerance) >> k
            for window in range(low, high + 1):
                if eid(p["key"], k, window << k) != value:
                    continue
                if p["heard"] is not None and window < p["heard"]:
                    return {"outcome": "replay", "pairing": index, "window": window, "trackedWindow": p["heard"]}
                p["heard"] = window
                start, end = window << k, ((window + 1) << k) - 1
                if expected < start:
                    p["offset"] = start - box_time
                elif expected > end:
                    p["offset"] = end - box_time
                return {"outcome": "resolved", "pairing": index, "window": window}
        return {"outcome": "unknown"}


def scenario(name, about, pairings, sightings, tolerance=86400):
    """sightings: (box time, the key that made the EID, K, beacon clock)."""
    model = Model(pairings, tolerance)
    steps = []
    for box_time, key, k, clock in sightings:
        value = eid(key, k, clock)
        step = {"boxTime": box_time, "eid": value.hex(), "beaconClock": clock}
        step.update(model.resolve(value, box_time))
        steps.append(step)
    return {
        "name": name,
        "about": about,
        "tolerance": tolerance,
        "pairings": [
            {"identityKey": p["key"].hex(), "rotationExponent": p["rotationExponent"],
             "beaconClock": p["beaconClock"], "boxTime": p["boxTime"]}
            for p in pairings
        ],
        "sightings": steps,
    }


def main():
    vectors = {
        "about": "Written by Tests/Crypto/oracle.py from the specifications; do not edit.",
        "aes128": [{"key": FIPS_KEY.hex(), "plaintext": FIPS_PLAIN.hex(), "ciphertext": FIPS_CIPHER.hex()}],
    }
    for _ in range(3):
        key, block = key16(), key16()
        vectors["aes128"].append({"key": key.hex(), "plaintext": block.hex(), "ciphertext": aes(key, block).hex()})

    vectors["eax"] = [
        {"key": k.lower(), "nonce": n.lower(), "header": h.lower(), "plaintext": m.lower(),
         "ciphertext": e[: len(m)].lower(), "tag": e[len(m):].lower()}
        for k, n, h, m, e in EAX_PAPER
    ]

    # EID values across the temporary key's roll-over (65535 -> 65536) and at every K edge.
    ik1 = key16()
    vectors["eid"] = []
    for k, clock in [(10, 65280), (10, 65535), (10, 65536), (0, 65535), (0, 65536), (15, 0x7FFF),
                     (15, 0x8000), (9, 0x12345678), (0, 0xFFFFFFFF), (12, 1_000_000)]:
        vectors["eid"].append({"identityKey": ik1.hex(), "rotationExponent": k, "beaconClock": clock,
                               "temporaryKey": temporary_key(ik1, clock).hex(), "eid": eid(ik1, k, clock).hex()})

    # ah: the Core spec's sample, then generated ones.
    vectors["ah"] = [{"irk": SPEC_IRK.hex(), "prand": SPEC_PRAND.hex(), "hash": "0dfbaa",
                      "address": "70:81:94:0D:FB:AA"}]
    irk2 = key16()
    for _ in range(3):
        prand = bytes([0x40 | RNG.getrandbits(6), RNG.getrandbits(8), RNG.getrandbits(8)])
        h = ah(irk2, prand)
        vectors["ah"].append({"irk": irk2.hex(), "prand": prand.hex(), "hash": h.hex(),
                              "address": ":".join(f"{b:02X}" for b in prand + h)})

    # Addresses against the pairings [SPEC_IRK, irk2]: which one each resolves to.
    rpa2 = vectors["ah"][1]["address"]
    vectors["rpa"] = {
        "irks": [SPEC_IRK.hex(), irk2.hex()],
        "addresses": [
            {"address": "70:81:94:0D:FB:AA", "pairing": 0, "why": "the Core spec's sample"},
            {"address": rpa2, "pairing": 1, "why": "a hash made with the second IRK"},
            {"address": "70:81:94:0D:FB:AB", "pairing": None, "why": "one bit of the hash flipped"},
            {"address": "30:81:94:0D:FB:AA", "pairing": None,
             "why": "the sample's hash, top bits 00: a non-resolvable private address, never tried"},
            {"address": "F0:81:94:0D:FB:AA", "pairing": None, "why": "top bits 11: a static random address"},
        ],
    }
    # The same device after it rotated: another prand under the sample's IRK (freshness tests).
    rotated = bytes.fromhex("4a1c2e")
    vectors["rpa"]["rotated"] = {
        "address": ":".join(f"{b:02X}" for b in rotated + ah(SPEC_IRK, rotated)), "pairing": 0,
        "why": "the sample's device after a rotation: a second address of the same IRK"}

    # Resolver scenarios. The box's clock starts at BOX; each pairing knows the beacon's clock at
    # its pairing time, as `beaconbridge pair --beacon-clock N` records it.
    BOX = 1_800_000_000
    k = 10
    beacon = lambda ik, start: {"key": ik, "rotationExponent": k, "beaconClock": start, "boxTime": BOX}
    ik2 = key16()
    wrong = key16()
    scenarios = []
    scenarios.append(scenario(
        "rollover",
        "a beacon paired at clock 65280 heard every 60 s for 20 minutes: its EID rotates at 65536, where the "
        "temporary key rolls over too, and every one resolves",
        [beacon(ik1, 65280)],
        [(BOX + s, ik1, k, 65280 + s) for s in range(0, 1201, 60)]))
    scenarios.append(scenario(
        "drift-ahead",
        "the beacon's clock runs 3 h ahead of the pairing's: found by the search within the tolerance, then "
        "tracked",
        [beacon(ik1, 65280)],
        [(BOX + 3600 + s, ik1, k, 65280 + 3600 + 10800 + s) for s in range(0, 3001, 500)]))
    scenarios.append(scenario(
        "drift-behind",
        "the beacon's clock runs 5 h behind (a power loss restored from its daily save): found, then tracked",
        [beacon(ik1, 200_000)],
        [(BOX + 600 + s, ik1, k, 200_000 + 600 - 18000 + s) for s in range(0, 3001, 500)]))
    # The tolerance's edges, to the second: a window whose first second is exactly E + T (inside)
    # and the one after it (outside); a window whose last second is exactly E - T (inside) and the
    # one before it (outside). E is the expected clock, T the tolerance.
    t = 86400
    above = 409_600 - t  # E + T = 409600 = window 400's first second
    below = 204_799 + t  # E - T = 204799 = window 199's last second
    for name, e, window in [("tolerance-above-inside", above, 400), ("tolerance-above-outside", above, 401),
                            ("tolerance-below-inside", below, 199), ("tolerance-below-outside", below, 198)]:
        assert ((e + t) >> k) == 400 and ((e + t) & 1023) == 0 or ((e - t) >> k) == 199 and ((e - t) & 1023) == 1023
        scenarios.append(scenario(
            name,
            f"an EID of window {window} while the expected clock is {e}: "
            f"{'its nearest second is exactly the tolerance away' if 'inside' in name else 'one window beyond'}",
            [beacon(ik1, e)],
            [(BOX, ik1, k, window << k)]))
    w0 = 400_000 >> k
    scenarios.append(scenario(
        "replay",
        "the beacon is heard in window w and w+2; the EIDs of w and w+1 played back afterwards are refused "
        "as replays; w+2 again still resolves",
        [beacon(ik1, w0 << k)],
        [(BOX + 100, ik1, k, (w0 << k) + 100),
         (BOX + 2 * 1024 + 100, ik1, k, ((w0 + 2) << k) + 100),
         (BOX + 2 * 1024 + 200, ik1, k, (w0 << k) + 100),
         (BOX + 2 * 1024 + 300, ik1, k, ((w0 + 1) << k) + 5),
         (BOX + 2 * 1024 + 400, ik1, k, ((w0 + 2) << k) + 400)]))
    scenarios.append(scenario(
        "wrong-key",
        "a beacon whose EIDs are made with a key no pairing holds, at the pairing's very clock: unknown",
        [beacon(ik1, 500_000)],
        [(BOX + s, wrong, k, 500_000 + s) for s in (0, 1024, 2048)]))
    scenarios.append(scenario(
        "two-pairings",
        "two paired beacons with different keys and clocks, interleaved: each resolves to its own pairing",
        [beacon(ik1, 65280), beacon(ik2, 9_000_000)],
        [(BOX + s, key, k, start + s) for s in range(0, 3000, 700)
         for key, start in [(ik1, 65280), (ik2, 9_000_000)]]))
    vectors["eidScenarios"] = scenarios

    # Encrypted TLM: battery 2950 mV, 23.5 C (8.8 fixed point), 1234567 advertisements, 765432.1 s.
    plain = (2950).to_bytes(2, "big") + bytes([23, 0x80]) + (1234567).to_bytes(4, "big") + \
        (7654321).to_bytes(4, "big")
    clock = 65280 + 300
    salt = bytes([0x5A, 0xC3])
    frame = etlm_frame(ik1, k, clock, salt, plain)
    assert eax_decrypt(ik1, ((clock >> k) << k).to_bytes(4, "big") + salt, b"", frame[2:14], frame[16:18]) == plain
    tampered = bytearray(frame)
    tampered[5] ^= 0x01
    assert eax_decrypt(ik1, ((clock >> k) << k).to_bytes(4, "big") + salt, b"", bytes(tampered[2:14]),
                       bytes(tampered[16:18])) is None
    vectors["etlm"] = [
        {"identityKey": ik1.hex(), "rotationExponent": k, "beaconClock": clock, "serviceData": frame.hex(),
         "plainTLM": plain.hex(), "valid": True, "why": "as a beacon sends it"},
        {"identityKey": ik1.hex(), "rotationExponent": k, "beaconClock": clock, "serviceData": bytes(tampered).hex(),
         "plainTLM": None, "valid": False, "why": "one bit of the ciphertext flipped"},
        {"identityKey": wrong.hex(), "rotationExponent": k, "beaconClock": clock, "serviceData": frame.hex(),
         "plainTLM": None, "valid": False, "why": "another beacon's key"},
        {"identityKey": ik1.hex(), "rotationExponent": k, "beaconClock": clock + 4 * 1024, "serviceData": frame.hex(),
         "plainTLM": None, "valid": False, "why": "a clock four windows later: another nonce"},
    ]
    for v in vectors["etlm"][2:]:
        key, c = bytes.fromhex(v["identityKey"]), v["beaconClock"]
        nonce = ((c >> k) << k).to_bytes(4, "big") + salt
        assert eax_decrypt(key, nonce, b"", frame[2:14], frame[16:18]) is None

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "vectors.json"), "w") as f:
        json.dump(vectors, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
