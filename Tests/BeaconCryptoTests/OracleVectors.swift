import BeaconCrypto
import Foundation

/// Tests/Crypto/vectors.json, written by Tests/Crypto/oracle.py from the specifications with
/// Python's `cryptography`: never by the code under test.
struct OracleVectors: Decodable {
  struct AESVector: Decodable { let key, plaintext, ciphertext: String }
  struct EAXVector: Decodable { let key, nonce, header, plaintext, ciphertext, tag: String }
  struct EIDVector: Decodable {
    let identityKey: String
    let rotationExponent: UInt8
    let beaconClock: UInt32
    let temporaryKey, eid: String
  }
  struct AHVector: Decodable { let irk, prand, hash, address: String }
  struct RPASet: Decodable {
    struct Address: Decodable {
      let address: String
      let pairing: Int?
      let why: String
    }
    let irks: [String]
    let addresses: [Address]
    /// A second address of the first IRK's device, as after a rotation.
    let rotated: Address
  }
  struct Scenario: Decodable {
    struct Pairing: Decodable {
      let identityKey: String
      let rotationExponent: UInt8
      let beaconClock: UInt32
      let boxTime: Int64
    }
    struct Sighting: Decodable {
      let boxTime: Int64
      let eid: String
      let beaconClock: UInt32
      let outcome: String
      let pairing: Int?
      let window: UInt32?
      let trackedWindow: UInt32?
    }
    let name, about: String
    let tolerance: Int64
    let pairings: [Pairing]
    let sightings: [Sighting]
  }
  struct ETLMVector: Decodable {
    let identityKey: String
    let rotationExponent: UInt8
    let beaconClock: UInt32
    let serviceData: String
    let plainTLM: String?
    let valid: Bool
    let why: String
  }

  let aes128: [AESVector]
  let eax: [EAXVector]
  let eid: [EIDVector]
  let ah: [AHVector]
  let rpa: RPASet
  let eidScenarios: [Scenario]
  let etlm: [ETLMVector]

  static let shared: OracleVectors = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Crypto/vectors.json")
    return try! JSONDecoder().decode(OracleVectors.self, from: Data(contentsOf: url))
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

func key(_ hex: String) -> AES128Key { try! AES128Key(hex: hex) }

func uint64(_ hex: String) -> UInt64 { UInt64(hex, radix: 16)! }

func address(_ text: String) -> UInt64 { uint64(text.replacingOccurrences(of: ":", with: "")) }

func exponent(_ k: UInt8) -> RotationExponent { RotationExponent(rawValue: k)! }
