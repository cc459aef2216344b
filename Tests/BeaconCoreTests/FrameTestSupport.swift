import BeaconCore
import Testing

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Helpers shared by the frame tests.
enum Fixture {
  static let address = BluetoothAddress("C0:FF:EE:00:00:01")!

  /// Hex literals in the tests are well formed; a typo should fail loudly.
  static func bytes(_ hex: String) -> [UInt8] {
    guard let bytes = Hex.decode(hex) else { fatalError("bad hex literal in a test: \(hex)") }
    return bytes
  }

  static func uuid(_ text: String) -> UUID {
    guard let uuid = UUID(uuidString: text) else { fatalError("bad UUID literal in a test: \(text)") }
    return uuid
  }

  static func iBeacon(_ uuid: String, _ major: UInt16, _ minor: UInt16, power: Int8) -> BeaconFrame {
    .iBeacon(
      IBeaconFrame(
        identity: BeaconIdentity(uuid: Self.uuid(uuid), major: major, minor: minor), measuredPower: power))
  }

  static func altBeacon(
    company: UInt16, _ uuid: String, _ major: UInt16, _ minor: UInt16, power: Int8, reserved: UInt8
  ) -> BeaconFrame {
    .altBeacon(
      AltBeaconFrame(
        companyID: company, identity: BeaconIdentity(uuid: Self.uuid(uuid), major: major, minor: minor),
        referenceRSSI: power, reserved: reserved))
  }

  /// Raw AD structures (as in an HCI report) through the whole frame pipeline.
  static func parse(_ hex: String) -> Result<FrameParseResult, FrameRejection> {
    Advertisement.parse(address: address, rssi: -60, adStructures: bytes(hex)).map(BeaconFrameParser.parse)
  }

  /// What a raw advertisement comes to: its frames, or the first rejection on the way.
  static func outcome(_ hex: String) -> Outcome {
    switch parse(hex) {
    case .failure(let rejection): .rejected(rejection.reason)
    case .success(let result):
      result.rejections.first.map { .rejected($0.reason) } ?? .frames(Array(result.frames))
    }
  }
}

enum Outcome: Hashable, Sendable {
  case frames([BeaconFrame])
  case rejected(FrameRejection.Reason)
}

/// One row of a frame table: where the bytes come from, the bytes, and what they must give.
struct FrameVector: Sendable, CustomTestStringConvertible {
  var name: String
  /// Where the vector was published, or "hand-built".
  var source: String
  var hex: String
  var expected: Outcome

  var testDescription: String { "\(name) [\(source)]" }
}
