import BeaconCore
import Foundation

/// The crypto oracle's vectors (Tests/Crypto/vectors.json, written by Tests/Crypto/oracle.py from
/// the specifications, never by the code under test), for the tests that need a real EID.
public enum OracleVectors {
  /// One Eddystone-EID vector: the identity key (32 hex digits), K, the beacon clock and the EID
  /// a beacon sends then.
  public struct EID: Sendable {
    public var identityKey: String
    public var rotationExponent: Int
    public var beaconClock: Int
    public var eid: [UInt8]
  }

  public struct Missing: Error, CustomStringConvertible {
    public var description: String
  }

  /// The first EID vector (key 7748ef…, K 10, clock 65280), read from the file.
  public static func firstEID() throws -> EID {
    let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("Tests")
    let vectors = try JSONValue.parse(Data(contentsOf: tests.appendingPathComponent("Crypto/vectors.json")))
    guard let vector = vectors["eid"]?.arrayValue?.first, let key = vector["identityKey"]?.stringValue,
      let k = vector["rotationExponent"]?.intValue, let clock = vector["beaconClock"]?.intValue,
      let eid = vector["eid"]?.stringValue.flatMap(Hex.decode)
    else { throw Missing(description: "Tests/Crypto/vectors.json has no complete first EID vector") }
    return EID(identityKey: key, rotationExponent: Int(k), beaconClock: Int(clock), eid: eid)
  }
}
