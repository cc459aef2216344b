import BeaconCore
import BeaconTestSupport
import BlueZ
import Foundation
import Testing

@testable import BridgeDaemon

/// The status contract: the `StatusDocument` the daemon builds and sends for D-Bus `Status` is
/// the one `status`, `doctor` and `pair --nearest` read back, and its JSON is the shape
/// docs/dbus-api.md documents.
@Suite struct StatusDocumentTests {
  /// A bridge that heard the van's iBeacon and a TLM from its address, with a trip under way.
  static func bridgeStatus() async throws -> BridgeStatus {
    var configuration = BridgeConfiguration()
    configuration.trips.sending = .postTrip
    let clock = VirtualClock()
    let bridge = BeaconBridge(
      host: RecordingHost(configuration: configuration), clock: clock, journal: MemoryJournal())
    await bridge.setPairings([Fixtures.vanPairing])
    try await bridge.start()
    for t in 0..<4 {
      clock.set(seconds: Double(t))
      await bridge.ingest(
        .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)))
    }
    // TLM: 2480 mV, 21.5 °C, 256 PDUs, 10.0 s.
    let tlm: [UInt8] = [0x20, 0x00, 0x09, 0xB0, 0x15, 0x80, 0, 0, 1, 0, 0, 0, 0, 100]
    await bridge.ingest(
      .sighting(
        Advertisement(
          address: Fixtures.vanAddress, rssi: -61, serviceData: [ServiceData(uuid: .eddystone, data: tlm)])))
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 4)])
    return await bridge.status
  }

  static func document(_ status: BridgeStatus) -> StatusDocument {
    var fleet = FleetLinkState(broker: "fleet.example:8883", boxId: "box-17")
    fleet.lastDesiredVersion = 4
    fleet.appliedSettings = [FleetSetting(section: "Health", key: "silentAfter", value: "900")]
    fleet.lastProblem = "the broker refused the connection: Not authorized"
    let outbox = OutboxSummary(
      trips: 1, undelivered: 3, unresolvedTrips: 1, deadLetters: 2, limit: 100, oldestAge: 12.4)
    return StatusDocument(
      status, scan: .waiting(backend: "bluez", reason: ScanWait(.noBlueZAdapter)), outbox: outbox,
      droppedAdvertisements: 5, manufacturerDataOverLimit: 1, fleet: fleet)
  }

  /// Built from the bridge, sent as text, read back: the same document, the daemon's health
  /// verdicts and the identity's integers included.
  @Test func aStatusRoundTrips() async throws {
    let document = Self.document(try await Self.bridgeStatus())
    let text = document.json.compactText
    let read = try StatusDocument(json: try JSONValue.parse(Data(text.utf8)))
    #expect(read == document, "\(text)")
    #expect(read.json.compactText == text)
    let van = try #require(read.pairedBeacons.first)
    #expect(van.deviceId == "UNIT-0042" && van.identity.major == 1 && van.identity.minor == 7)
    #expect(van.health.batteryMillivolts == 2480 && van.health.advertisingCount == 256)
    #expect(van.calibration.measuredPower == -59)
    #expect(read.trips.map(\.tripId) == ["t1"] && read.scan.state == .waiting)
    #expect(read.fleet?.appliedSettings == ["Health": ["silentAfter": "900"]])
    #expect(read.outbox?.oldestAgeSeconds == 12)
  }

  static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures/status/status.json")

  /// A reply written by hand from docs/dbus-api.md reads, and writes back as the same JSON: every
  /// key where the documentation puts it, integers as integers.
  @Test func theDocumentedShapeReadsAndWritesBack() throws {
    let documented = try JSONValue.parse(try Data(contentsOf: Self.fixture))
    let document = try StatusDocument(json: documented)
    // Compared as text: `10` reads back as a Double and writes as `10` again.
    #expect(document.json.compactText == documented.compactText)
    #expect(document.pairedBeacons.map(\.name) == ["UNIT-0042 (van 7)", "UNIT-E1"])
    #expect(document.pairedBeacons.last?.identity.pairing == 2)
    #expect(document.beaconsInRange.last?.identity.namespace == "12121212121212121212")
    #expect(document.upload.state == .failing && document.upload.consecutiveFailures == 3)
    #expect(document.json.compactText.contains("\"batteryMv\":2480,"))
  }

  /// A reply from another version: a missing key is a sentence naming it, never a Swift value;
  /// a key this version does not know is left alone.
  @Test func anotherVersionsReplyIsASentence() throws {
    let documented = try JSONValue.parse(try Data(contentsOf: Self.fixture))
    guard case .object(var fields) = documented, case .array(var paired)? = fields["pairedBeacons"],
      case .object(var first) = paired[0]
    else { throw StatusDocumentError(path: "", problem: .missing) }
    first["silent"] = nil
    paired[0] = .object(first)
    fields["pairedBeacons"] = .array(paired)
    fields["somethingNewer"] = .string("ignored")
    var caught: StatusDocumentError?
    do { _ = try StatusDocument(json: .object(fields)) } catch { caught = error }
    let sentence = try #require(caught).description
    #expect(sentence.contains("\"pairedBeacons[0].silent\""), "\(sentence)")
    #expect(sentence.contains("another version") && sentence.contains("systemctl restart beaconbridge"))
    for dump in ["(message:", "Failure(", "StatusDocumentError", "keyNotFound"] {
      #expect(!sentence.contains(dump))
    }

    fields["pairedBeacons"] = documented["pairedBeacons"]
    fields["upload"] = .string("x")
    do { _ = try StatusDocument(json: .object(fields)) } catch { caught = error }
    #expect(caught?.description.contains("has a string for \"upload\", where an object belongs") == true)
    fields["upload"] = documented["upload"]
    #expect(try StatusDocument(json: .object(fields)) == StatusDocument(json: documented))
  }

  /// The trip replies (`TripStart`, `TripEnd`) are the status's own trip objects.
  @Test func aTripReplyIsTheStatusTrip() async throws {
    let status = try await Self.bridgeStatus()
    let trip = try #require(status.trips.first)
    let json = StatusDocument.Trip(trip).json
    #expect(Self.document(status).json["trips"]?.arrayValue?.first == json)
    #expect(json["ended"] == .bool(false) && json["tripId"] == .string("t1"))
  }
}
