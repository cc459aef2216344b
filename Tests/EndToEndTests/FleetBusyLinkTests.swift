import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The fleet link loses no input (docs/fleet.md "Desired and reported"): with the link busy (a
/// broker slow to acknowledge, through Tests/Support/mqtt_proxy.py, so each beacon report holds
/// the link for a second) and a street's worth of beacon news, a desired document is still
/// answered and a trip end still applies the document that waited for it. The daemon on the
/// dbusmock BlueZ, a real Mosquitto.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct FleetBusyLinkTests {
  @Test func aBusyLinkAnswersTheDocumentAndAppliesThePendingOne() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let bus = fixture.bus.address
    let broker = try MosquittoBroker()
    let proxy = try MQTTProxy(broker: broker, pubacks: .delay(1))
    let dir = try scratchDirectory("fleet-busy")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try """
    [Trips]
    unresolvedPolicy = fallback
    fallbackDeviceId = DEPOT-7
    lateWindow = 0
    [ActiveBeacon]
    dwellSeconds = 0.5
    [Fleet]
    BoxId = busy
    URL = mqtt://127.0.0.1:\(proxy.port)
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let desired = "fleet/busy/config/desired"
    let reported = try MQTTWatcher(broker, topic: "fleet/busy/config/reported")
    var answers: [String] {
      reported.messages.map {
        "\($0.payload["state"]?.stringValue ?? "?")@\($0.payload["version"]?.intValue.map(String.init) ?? "-")"
      }
    }
    try await broker.publish(desired, FleetDesiredTests.document(1, [(7, "UNIT-0042")]))
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, log: dir + "/daemon.log")
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = {
      (try? String(contentsOfFile: dir + "/daemon.log", encoding: .utf8)) ?? ""
    }
    try await waitUntil("v1 applied: \(answers)\n\(log())", timeout: .seconds(30)) {
      answers == ["applied@1"]
    }
    let cli = DaemonEndToEndTests()
    #expect(try await cli.cli(["trip", "start", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    try await broker.publish(desired, FleetDesiredTests.document(2, [(8, "UNIT-0043")]))
    try await waitUntil("v2 pending: \(answers)") { answers == ["applied@1", "pending@2"] }

    // A street: the paired beacon's sightings and a hundred telemetry frames, each one news.
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    try await fixture.advertise(device, ["ManufacturerData": iBeaconManufacturerData(), "RSSI": .int16(-60)])
    func flood(_ range: Range<Int>) async throws {
      for frame in range {
        try await fixture.advertise(
          device,
          [
            "ServiceData": BeaconHealthEndToEndTests.tlm(
              mv: UInt16(3000 - frame), count: UInt32(1000 + frame), uptimeTenths: UInt32(36_000 + frame))
          ])
      }
    }
    try await flood(0..<10)
    // The link is busy with a beacon report whose PUBACK is a second away: the document and the
    // news below queue behind it.
    try await waitUntil("a beacon report in flight; proxy:\n\(proxy.log.suffix(20))") {
      proxy.published("fleet/busy/beacons") >= 1
    }
    try await broker.publish(desired, FleetDesiredTests.document(3, [(9, "UNIT-0044")]))
    try await flood(10..<60)
    try await waitUntil("v3 answered pending: \(answers)\n\(log())", timeout: .seconds(30)) {
      answers.last == "pending@3"
    }
    try await flood(60..<80)
    #expect(try await cli.cli(["trip", "end", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    try await flood(80..<100)

    try await waitUntil("v3 applied at the trip's end: \(answers)\n\(log())", timeout: .seconds(60)) {
      answers.last == "applied@3"
    }
    #expect(answers == ["applied@1", "pending@2", "pending@3", "applied@3"])
    let pairs = try await cli.cli(["pairs"], bus: bus, dir: dir)
    #expect(pairs.stdout.contains("UNIT-0044") && !pairs.stdout.contains("UNIT-0043"), "\(pairs.stdout)")
    print(
      "fleet busy link: \(proxy.log.filter { $0 == "puback delayed" }.count) PUBACKs delayed 1 s, \(proxy.published("fleet/busy/beacons")) beacon reports, answers \(answers)"
    )
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
  }
}
