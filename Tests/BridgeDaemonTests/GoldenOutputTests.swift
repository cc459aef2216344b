import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// The daemon's outputs against the golden files in Tests/Golden/daemon: the D-Bus `Status`
/// reply, the upload body over HTTP and MQTT, the fleet's beacon report entries and the
/// `Pairings` reply, each built from a bridge and a store driven as a box drives them. A change
/// to any of them is a change to a checked-in file (`BEACONBRIDGE_UPDATE_GOLDEN=1` rewrites).
@Suite struct GoldenOutputTests {
  static func expectGolden(
    _ output: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let mismatch = Golden.mismatch(output, folder: "daemon", name: name)
    #expect(mismatch == nil, "\(mismatch ?? "")", sourceLocation: sourceLocation)
  }

  /// `Status` as the daemon sends it, with a fleet link, an outbox and a scan condition. The
  /// CLI's golden `status` text is made from this file (BeaconBridgeCLITests).
  @Test func theStatusReply() async throws {
    let document = StatusDocumentTests.document(try await StatusDocumentTests.bridgeStatus())
    Self.expectGolden(document.json.compactText + "\n", "status.json")
  }

  /// A trip tagged from the van's beacon, posted in realtime: the HTTP body and the MQTT
  /// message (the same object with its idempotency key).
  @Test func theUploadBodies() async throws {
    let clock = VirtualClock()
    let host = RecordingHost(configuration: BridgeConfiguration())
    let bridge = BeaconBridge(host: host, clock: clock, journal: MemoryJournal())
    await bridge.setPairings([Fixtures.vanPairing])
    try await bridge.start()
    for t in 0..<6 {
      clock.set(seconds: Double(t))
      await bridge.ingest(
        .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60 - t)))
    }
    try await bridge.tripStart("trip-17")
    try await bridge.tripEvents(
      "trip-17",
      events: [
        Fixtures.event("braking", at: 6.5, extra: ["g": .double(0.42), "note": .string("ü \"x\"")]),
        Fixtures.event("speeding", at: 7, extra: ["kmh": .int(93)]),
      ])
    try await bridge.tripEnd("trip-17")
    try await waitUntil("the batch is posted") { !host.posted.isEmpty }
    let payload = try UploadPayload(try #require(host.posted.first))
    Self.expectGolden(String(decoding: payload.httpBody, as: UTF8.self) + "\n", "upload-http.json")
    Self.expectGolden(String(decoding: payload.mqttBody, as: UTF8.self) + "\n", "upload-mqtt.json")
    #expect(payload.idempotencyKey == "trip-17#0")
  }

  /// The beacon report's entries, with ages made absolute against a fixed wall clock.
  @Test func theFleetReportEntries() async throws {
    let status = try await StatusDocumentTests.bridgeStatus()
    let wall = Date(timeIntervalSince1970: 1_780_000_000)
    let entries = status.pairedBeacons.map { paired in
      FleetBeaconReport.entry(paired, now: status.now) { ago in
        ago.map { wall.addingTimeInterval(-$0).formatted(.iso8601) }
      }.json
    }
    Self.expectGolden(JSONValue.array(entries).compactText + "\n", "fleet-report-entries.json")
  }

  /// `Pairings` as the daemon answers it: pairings by identity, a whole-major one, and one by
  /// key (its number and scheme, never its key).
  @Test func thePairingsReply() async throws {
    let dir = try scratchDirectory("golden-pairings")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    try await store.pair(Fixtures.vanPairing)
    try await store.pair(
      Pairing(uuid: Fixtures.fleet, major: 2, minor: nil, deviceId: "UNIT-0099", label: "depot"))
    _ = try await store.pairByKey(
      scheme: .eid, key: Array(String(repeating: "1a", count: 16).utf8), rotationExponent: 10, clockOffset: 0,
      deviceId: "UNIT-E1", label: "eid van")
    let reply = JSONValue.array(try await store.pairingsWithSource().map(\.json)).compactText
    #expect(!reply.contains("1a1a1a1a"))
    Self.expectGolden(reply + "\n", "pairings.json")
  }
}
