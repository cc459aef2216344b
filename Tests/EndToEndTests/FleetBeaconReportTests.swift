import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The beacon report on `fleet/{boxId}/beacons` (docs/fleet.md): the daemon on the dbusmock
/// BlueZ, its pairing from the desired document, a paired iBeacon with Eddystone-TLM from the
/// same address; a battery change is news, published retained.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct FleetBeaconReportTests {
  @Test func theReportIsPublishedAfterABatteryChange() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let broker = try MosquittoBroker()
    let dir = try scratchDirectory("fleet-beacons")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = try FleetPresenceTests.configuration(
      in: dir, broker: broker, boxId: "van-5", extra: "[ActiveBeacon]\ndwellSeconds = 0.5\n")
    try await broker.publish(
      "fleet/van-5/config/desired",
      FleetDesiredTests.document(1, [(7, "UNIT-0042")]))
    let report = try MQTTWatcher(broker, topic: "fleet/van-5/beacons")
    let daemon = try launchDaemon(
      config: config, stateDirectory: dir, bus: fixture.bus.address, log: dir + "/daemon.log")
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = {
      (try? String(contentsOfFile: dir + "/daemon.log", encoding: .utf8)) ?? ""
    }
    try await waitUntil("the pairing applied; log:\n\(log())") { log().contains("desired version 1 applied") }

    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    func beacon(_ reports: [MQTTWatcher.Message]) -> [JSONValue] {
      reports.compactMap { $0.payload["beacons"]?.arrayValue?.first }
    }
    for _ in 0..<3 {
      try await fixture.advertise(
        device, ["ManufacturerData": iBeaconManufacturerData(), "RSSI": .int16(-60)])
    }
    try await fixture.advertise(
      device, ["ServiceData": BeaconHealthEndToEndTests.tlm(mv: 3000, count: 1000, uptimeTenths: 36_000)])
    try await waitUntil("a report with 3000 mV: \(report.messages.map(\.payload.compactText))\n\(log())") {
      beacon(report.messages).last?["batteryMv"]?.intValue == 3000
    }
    try await fixture.advertise(
      device, ["ServiceData": BeaconHealthEndToEndTests.tlm(mv: 2900, count: 1100, uptimeTenths: 36_100)])
    try await waitUntil("a report with 2900 mV: \(report.messages.map(\.payload.compactText))") {
      beacon(report.messages).last?["batteryMv"]?.intValue == 2900
    }
    let entry = try #require(beacon(report.messages).last)
    print("fleet beacon report: \(entry.compactText)")
    #expect(entry["deviceId"]?.stringValue == "UNIT-0042")
    #expect(entry["minor"]?.intValue == 7)
    #expect(entry["batteryTrend"]?.stringValue == "falling")
    #expect(entry["authentication"]?.stringValue == "none")
    #expect(entry["uuid"]?.stringValue == "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0" && entry["pairing"] == nil)
    #expect(entry["silent"] == .bool(false) && entry["batteryLow"] == .bool(false))
    #expect(entry["possibleClone"] == .bool(false))
    #expect(entry["reboots"]?.intValue == 0)
    #expect(entry["rssi"]?.intValue == -60)
    #expect(entry["lastSeenAt"]?.stringValue?.hasSuffix("Z") == true)
    // Retained: a backend that subscribes now gets the latest report.
    #expect(
      try await broker.retained("fleet/van-5/beacons")?["beacons"]?.arrayValue?.first?["batteryMv"]?.intValue
        == 2900)
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
  }
}
