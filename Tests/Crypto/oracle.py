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
- X25519: RFC 7748 (section 6.1's Alice and Bob are checked first, then written as a vector).
- HKDF-SHA256: RFC 5869 section 2, written here over HMAC-SHA256 and checked against its test
  cases 1 to 3 (appendix A) and against `cryptography`'s own HKDF.
- The EID key exchange: google/eddystone eddystone-eid/eid-computation.md, "Secure key exchange
  EID configuration": the X25519 shared secret of one side's private key and the other's public
  key, refused when it is zero; HKDF-SHA256 with salt = resolver public key || beacon public key
  (both little-endian, as configuration-service/README.md sends them), the shared secret as
  input, no info; the identity key is the first 16 bytes.

The resolver scenarios encode the rules of docs/authentication.md as a small reference model
(`Model` below): the tolerance around the tracked clock, the replay rule, the tracking of the
beacon's clock as heard.
"""
import json
import os
import random
import sys

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.cmac import CMAC
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, PrivateFormat, NoEncryption

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


# --- X25519 (RFC 7748) --------------------------------------------------------------------------
def x25519_public(private):
    raw = X25519PrivateKey.from_private_bytes(private).public_key()
    return raw.public_bytes(Encoding.Raw, PublicFormat.Raw)


def x25519(private, public):
    """The shared secret, or None when it is all zero: `cryptography` refuses a low-order point
    (RFC 7748 section 6.1's check) with ValueError, which is the same zero secret."""
    try:
        shared = X25519PrivateKey.from_private_bytes(private).exchange(X25519PublicKey.from_public_bytes(public))
    except ValueError:
        return None
    return None if shared == bytes(32) else shared


RFC7748 = {
    "alicePrivate": "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
    "alicePublic": "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
    "bobPrivate": "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
    "bobPublic": "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
    "sharedSecret": "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
}
_a, _b = bytes.fromhex(RFC7748["alicePrivate"]), bytes.fromhex(RFC7748["bobPrivate"])
assert x25519_public(_a).hex() == RFC7748["alicePublic"], "RFC 7748 6.1 Alice's public key"
assert x25519_public(_b).hex() == RFC7748["bobPublic"], "RFC 7748 6.1 Bob's public key"
assert x25519(_a, bytes.fromhex(RFC7748["bobPublic"])).hex() == RFC7748["sharedSecret"], "RFC 7748 6.1 K"
assert x25519(_b, bytes.fromhex(RFC7748["alicePublic"])).hex() == RFC7748["sharedSecret"], "RFC 7748 6.1 K"


# --- HKDF-SHA256 (RFC 5869) ------------------------------------------------------------------------
def hmac_sha256(key, message):
    mac = hmac.HMAC(key, hashes.SHA256())
    mac.update(message)
    return mac.finalize()


def hkdf_extract(salt, ikm):
    return hmac_sha256(salt if salt else bytes(32), ikm)


def hkdf_expand(prk, info, length):
    assert length <= 255 * 32
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac_sha256(prk, block + info + bytes([counter]))
        out += block
        counter += 1
    return out[:length]


def hkdf(salt, ikm, info, length):
    okm = hkdf_expand(hkdf_extract(salt, ikm), info, length)
    assert okm == HKDF(hashes.SHA256(), length, salt if salt else None, info).derive(ikm)
    return okm


RFC5869 = [
    # test case, IKM, salt, info, L, PRK, OKM (appendix A.1 to A.3)
    (1, "0b" * 22, "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9", 42,
     "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
     "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
    (2, bytes(range(0x00, 0x50)).hex(), bytes(range(0x60, 0xB0)).hex(), bytes(range(0xB0, 0x100)).hex(), 82,
     "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
     "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8"
     "367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"),
    (3, "0b" * 22, "", "", 42,
     "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
     "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
]
for case, ikm, salt, info, length, prk, okm in RFC5869:
    assert hkdf_extract(bytes.fromhex(salt), bytes.fromhex(ikm)).hex() == prk, f"RFC 5869 A.{case} PRK"
    assert hkdf(bytes.fromhex(salt), bytes.fromhex(ikm), bytes.fromhex(info), length).hex() == okm, \
        f"RFC 5869 A.{case} OKM"


# --- The EID key exchange (eid-computation.md, "Computing the identity key") ---------------------
def identity_key(own_private, peer_public, resolver_public, beacon_public):
    """The 16-byte identity key, or None when the shared secret is zero ("report an error")."""
    shared = x25519(own_private, peer_public)
    if shared is None:
        return None
    return hkdf(resolver_public + beacon_public, shared, b"", 32)[:16]


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


def key_exchange(vectors):
    """X25519, HKDF-SHA256 and the EID key exchange. A generator of their own, so that these
    vectors leave every one written before them as it was."""
    rng = random.Random(7748)
    key32 = lambda: bytes(rng.getrandbits(8) for _ in range(32))
    vectors["x25519"] = [dict(RFC7748, why="RFC 7748 section 6.1")]
    for _ in range(2):
        a, b = key32(), key32()
        vectors["x25519"].append({
            "alicePrivate": a.hex(), "alicePublic": x25519_public(a).hex(), "bobPrivate": b.hex(),
            "bobPublic": x25519_public(b).hex(), "sharedSecret": x25519(a, x25519_public(b)).hex(),
            "why": "generated"})
    vectors["hkdfSHA256"] = [
        {"ikm": ikm, "salt": salt, "info": info, "length": length, "prk": prk, "okm": okm,
         "why": f"RFC 5869 test case {case}"}
        for case, ikm, salt, info, length, prk, okm in RFC5869]

    exchanges = []
    # A low-order public key (RFC 7748 section 6.1: the all-zero output such a point gives): u = 0,
    # u = 1, and the order-8 point from the curve's list of small-order points.
    low_order = ["00" * 32, "01" + "00" * 31,
                 "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"]
    for k, clock in [(10, 65280), (0, 1_000_000), (15, 0xFFFFFF00), (8, 0)]:
        resolver, beacon = key32(), key32()
        rp, bp = x25519_public(resolver), x25519_public(beacon)
        ik = identity_key(resolver, bp, rp, bp)
        assert ik == identity_key(beacon, rp, rp, bp), "both sides derive the same key"
        exchanges.append({
            "resolverPrivate": resolver.hex(), "resolverPublic": rp.hex(), "beaconPrivate": beacon.hex(),
            "beaconPublic": bp.hex(), "sharedSecret": x25519(resolver, bp).hex(), "identityKey": ik.hex(),
            "rotationExponent": k, "beaconClock": clock, "eid": eid(ik, k, clock).hex(),
            "why": "the resolver's and the beacon's derivations agree"})
    for point in low_order:
        resolver = key32()
        rp = x25519_public(resolver)
        assert identity_key(resolver, bytes.fromhex(point), rp, bytes.fromhex(point)) is None
        exchanges.append({
            "resolverPrivate": resolver.hex(), "resolverPublic": rp.hex(), "beaconPrivate": None,
            "beaconPublic": point, "sharedSecret": None, "identityKey": None, "rotationExponent": 10,
            "beaconClock": 65280, "eid": None,
            "why": "a beacon public key of low order: the shared secret is zero and the key is refused"})
    vectors["eidKeyExchange"] = exchanges


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

    key_exchange(vectors)

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "vectors.json"), "w") as f:
        json.dump(vectors, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
