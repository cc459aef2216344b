import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconCore

/// The output model (`Output/`): one figure, one rounding, whichever output carries it; a
/// pairing written by its type reads back as the same pairing; a reply that does not read
/// names where.
@Suite struct OutputModelTests {
  static let tracked = TrackedBeacon(
    id: .iBeacon(Fixtures.vanBeacon), address: Fixtures.vanAddress, firstSeen: Timestamp(seconds: 0),
    lastSeen: Timestamp(seconds: 5), sightings: 6, lastRSSI: -61, smoothedRSSI: -60.26, powerAt1m: -59,
    distance: 1.26, proximity: .near)

  /// The distance and the smoothed RSSI are the same number in an event line and the status.
  @Test func aFigureIsRoundedOnceForEveryOutput() throws {
    let beacon = ReportedBeacon(Self.tracked)
    let event = Dictionary(beacon.eventFields, uniquingKeysWith: { $1 })
    #expect(event["distance"] == .double(1.3))
    #expect(event["smoothedRssi"] == .double(-60.3))
    #expect(beacon.json["distance"] == .double(1.3))
    #expect(beacon.json["smoothedRssi"] == .double(-60.3))
    let read = try ReportedBeacon(json: beacon.json, path: "")
    #expect(read == beacon)
  }

  @Test(arguments: [
    Fixtures.vanPairing,
    Pairing(uuid: Fixtures.fleet, major: 2, minor: nil, deviceId: "UNIT-0099"),
    Pairing(key: KeyedIdentity(scheme: .rpa, pairing: 3), deviceId: "PHONE-7", label: "driver"),
  ])
  func aPairingReadsBackAsItself(pairing: Pairing) throws {
    let written = ReportedPairing(pairing, source: .fleet)
    let read = try ReportedPairing(json: written.json, path: "[0]")
    #expect(read == written)
  }

  /// A device ID no door would take does not read: the error names the field.
  @Test func aBadDeviceIDInAReplyIsNamed() throws {
    var fields = ReportedPairing(Fixtures.vanPairing).json.objectValue ?? [:]
    fields["deviceId"] = .string(" ")
    #expect(throws: FieldError(path: "[2].deviceId", problem: .unknownValue(" "))) {
      try ReportedPairing(json: .object(fields), path: "[2]")
    }
    fields["deviceId"] = nil
    #expect(throws: FieldError(path: "[2].deviceId", problem: .missing)) {
      try ReportedPairing(json: .object(fields), path: "[2]")
    }
  }
}
