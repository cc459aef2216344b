import BeaconCrypto
import Foundation

/// The key-exchange part of Tests/Crypto/vectors.json, written by Tests/Crypto/oracle.py from
/// RFC 7748, RFC 5869 and google/eddystone's eid-computation.md with Python's `cryptography`:
/// never by the code under test.
struct KeyExchangeVectors: Decodable {
  struct X25519Vector: Decodable, Sendable {
    let alicePrivate, alicePublic, bobPrivate, bobPublic, sharedSecret, why: String
  }
  struct HKDFVector: Decodable, Sendable {
    let ikm, salt, info, prk, okm, why: String
    let length: Int
  }
  struct Exchange: Decodable, Sendable {
    let resolverPrivate, resolverPublic, beaconPublic, why: String
    let beaconPrivate, sharedSecret, identityKey, eid: String?
    let rotationExponent: UInt8
    let beaconClock: UInt32
  }
  let x25519: [X25519Vector]
  let hkdfSHA256: [HKDFVector]
  let eidKeyExchange: [Exchange]

  static let shared: KeyExchangeVectors = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Crypto/vectors.json")
    return try! JSONDecoder().decode(KeyExchangeVectors.self, from: Data(contentsOf: url))
  }()
}

func bytes(_ hex: String) -> [UInt8] {
  var out: [UInt8] = []
  var index = hex.startIndex
  while index < hex.endIndex {
    let next = hex.index(index, offsetBy: 2)
    out.append(UInt8(hex[index..<next], radix: 16)!)
    index = next
  }
  return out
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Two AES keys are the same key when they encrypt a block alike: a key cannot be read back.
func sameKey(_ a: AES128Key, _ b: AES128Key) -> Bool {
  let probes = [AESBlock(high: 0, low: 0), AESBlock(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)]
  return probes.allSatisfy { a.encrypt($0) == b.encrypt($0) }
}
