import Foundation

/// The crypto oracle's vectors: Tests/Crypto/vectors.json, written by Tests/Crypto/oracle.py from
/// the specifications (FIPS 197, the EAX paper, the Bluetooth Core spec, RFC 7748, RFC 5869 and
/// google/eddystone) with Python's `cryptography`, never by the code under test. Every test target
/// reads the file through this one model.
public struct OracleVectors: Decodable, Sendable {
  public struct AESVector: Decodable, Sendable { public let key, plaintext, ciphertext: String }
  public struct EAXVector: Decodable, Sendable {
    public let key, nonce, header, plaintext, ciphertext, tag: String
  }
  public struct EIDVector: Decodable, Sendable {
    public let identityKey: String
    public let rotationExponent: UInt8
    public let beaconClock: UInt32
    public let temporaryKey, eid: String
  }
  public struct AHVector: Decodable, Sendable { public let irk, prand, hash, address: String }
  public struct RPASet: Decodable, Sendable {
    public struct Address: Decodable, Sendable {
      public let address: String
      public let pairing: Int?
      public let why: String
    }
    public let irks: [String]
    public let addresses: [Address]
    /// A second address of the first IRK's device, as after a rotation.
    public let rotated: Address
  }
  public struct Scenario: Decodable, Sendable {
    public struct Pairing: Decodable, Sendable {
      public let identityKey: String
      public let rotationExponent: UInt8
      public let beaconClock: UInt32
      public let boxTime: Int64
    }
    public struct Sighting: Decodable, Sendable {
      public let boxTime: Int64
      public let eid: String
      public let beaconClock: UInt32
      public let outcome: String
      public let pairing: Int?
      public let window: UInt32?
      public let trackedWindow: UInt32?
    }
    public let name, about: String
    public let tolerance: Int64
    public let pairings: [Pairing]
    public let sightings: [Sighting]
  }
  public struct ETLMVector: Decodable, Sendable {
    public let identityKey: String
    public let rotationExponent: UInt8
    public let beaconClock: UInt32
    public let serviceData: String
    public let plainTLM: String?
    public let valid: Bool
    public let why: String
  }
  public struct X25519Vector: Decodable, Sendable {
    public let alicePrivate, alicePublic, bobPrivate, bobPublic, sharedSecret, why: String
  }
  public struct HKDFVector: Decodable, Sendable {
    public let ikm, salt, info, prk, okm, why: String
    public let length: Int
  }
  public struct Exchange: Decodable, Sendable {
    public let resolverPrivate, resolverPublic, beaconPublic, why: String
    public let beaconPrivate, sharedSecret, identityKey, eid: String?
    public let rotationExponent: UInt8
    public let beaconClock: UInt32
  }

  public let aes128: [AESVector]
  public let eax: [EAXVector]
  public let eid: [EIDVector]
  public let ah: [AHVector]
  public let rpa: RPASet
  public let eidScenarios: [Scenario]
  public let etlm: [ETLMVector]
  public let x25519: [X25519Vector]
  public let hkdfSHA256: [HKDFVector]
  public let eidKeyExchange: [Exchange]

  /// The file, read once; a test run without it cannot test anything it holds.
  public static let shared: OracleVectors = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("Tests/Crypto/vectors.json")
    do {
      return try JSONDecoder().decode(OracleVectors.self, from: Data(contentsOf: url))
    } catch {
      fatalError("\(url.path) cannot be read as the oracle's vectors: \(error)")
    }
  }()

  /// One Eddystone-EID vector in the form the daemon's tests pass to the CLI and D-Bus: the
  /// identity key (32 hex digits), K, the beacon clock and the EID a beacon sends then.
  public struct EID: Sendable {
    public var identityKey: String
    public var rotationExponent: Int
    public var beaconClock: Int
    public var eid: [UInt8]
  }

  public struct Missing: Error, CustomStringConvertible {
    public var description: String
  }

  /// The first EID vector (key 7748ef…, K 10, clock 65280).
  public static func firstEID() throws -> EID {
    guard let vector = shared.eid.first else {
      throw Missing(description: "Tests/Crypto/vectors.json has no EID vector")
    }
    return EID(
      identityKey: vector.identityKey, rotationExponent: Int(vector.rotationExponent),
      beaconClock: Int(vector.beaconClock), eid: bytes(vector.eid))
  }
}

/// The bytes of a string of hex digits from the oracle's file (well formed by construction).
public func bytes(_ hex: String) -> [UInt8] {
  var out: [UInt8] = []
  var index = hex.startIndex
  while index < hex.endIndex {
    let next = hex.index(index, offsetBy: 2)
    out.append(UInt8(hex[index..<next], radix: 16)!)
    index = next
  }
  return out
}

/// Lower-case hex, as the oracle's file writes bytes.
public func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
