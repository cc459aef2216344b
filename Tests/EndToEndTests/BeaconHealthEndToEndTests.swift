import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Issue 17 end to end: the daemon on a private dbus-daemon with the dbusmock BlueZ, a paired
/// iBeacon interleaving Eddystone-TLM from one address. `status --json` shows the battery joined
/// to the paired beacon; a battery dropping under `[Health] lowBatteryMillivolts` and an uptime
/// going backwards are `BeaconHealth` signals, and `doctor` warns about both.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct BeaconHealthEndToEndTests {
  /// Eddystone-TLM version 0 service data (Eddystone-TLM specification): battery mV, 22.25 °C,
  /// advertising count, uptime in 0.1 s.
  static func tlm(mv: UInt16, count: UInt32, uptimeTenths: UInt32) -> DBusValue {
    func be32(_ v: UInt32) -> [UInt8] {
      [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }
    let bytes: [UInt8] =
      [0x20, 0x00, UInt8(mv >> 8), UInt8(mv & 0xFF), 0x16, 0x40] + be32(count) + be32(uptimeTenths)
    return .dictionary(
      key: "s", value: "v", [.init(.string(ServiceUUID.eddystone.description), .variant(.bytes(bytes)))])
  }

  @Test func tlmHealthInStatusSignalAndDoctor() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = try scratchDirectory("health-e2e")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "[ActiveBeacon]\ndwellSeconds = 0.5\n\n[Health]\nlowBatteryMillivolts = 2500\n".write(
      toFile: config, atomically: true, encoding: .utf8)
    let cli = DaemonEndToEndTests()
    let bus = fixture.bus.address
    let paired = try await cli.cli(
      [
        "pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--major", "1", "--minor", "7",
        "--device-id", "UNIT-0042", "--label", "van 7", "--state-dir", dir,
      ], bus: bus, dir: dir)
    #expect(paired.status == 0, "\(paired.stderr)")

    let logPath = dir + "/daemon.log"
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, log: logPath)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    try await waitUntil("daemon log:\n\(log())") { log().contains("ready: serving") }

    let watcher = try Connection(.address(bus))
    defer { watcher.close() }
    let subscription = try await watcher.subscribe(
      to: MatchRule(interface: "org.beaconbridge.Bridge1", member: "BeaconHealth"))
    let signals = Mutex<[[DBusValue]]>([])
    let reader = Task {
      for await batch in subscription.batches { signals.withLock { $0 += batch.map(\.body) } }
    }
    defer { reader.cancel() }

    // One device (one address): the iBeacon, then TLM from the same address, interleaved.
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    for _ in 0..<3 {
      try await fixture.advertise(
        device, ["ManufacturerData": iBeaconManufacturerData(), "RSSI": .int16(-60)])
      try await Task.sleep(for: .milliseconds(300))
    }
    try await fixture.advertise(
      device, ["ServiceData": Self.tlm(mv: 3000, count: 1000, uptimeTenths: 36_000)])
    let status: @Sendable () async throws -> JSONValue? = {
      let result = try await cli.cli(["status", "--json"], bus: bus, dir: dir)
      guard result.status == 0 else { return nil }
      return try JSONValue.parse(Data(result.stdout.utf8))["pairedBeacons"]?.arrayValue?.first
    }
    try await waitUntil("daemon log:\n\(log())") { try await status()?["batteryMv"]?.intValue == 3000 }
    #expect(signals.withLock { $0.isEmpty })

    // The battery drops under the threshold: one BeaconHealth batteryLow.
    try await fixture.advertise(
      device, ["ServiceData": Self.tlm(mv: 2400, count: 1100, uptimeTenths: 36_100)])
    try await waitUntil("daemon log:\n\(log())") { signals.withLock { $0.count } >= 1 }
    let low = try #require(signals.withLock { $0.first })
    #expect(low.count == 3)
    #expect(low.first?.string == "UNIT-0042")
    #expect(low.dropFirst().first?.string == "batteryLow")
    let lowJSON = try JSONValue.parse(Data((low.last?.string ?? "").utf8))
    #expect(lowJSON["batteryMv"]?.intValue == 2400)
    #expect(lowJSON["minor"]?.intValue == 7)

    // The uptime goes backwards: BeaconHealth rebooted.
    try await fixture.advertise(device, ["ServiceData": Self.tlm(mv: 2410, count: 3, uptimeTenths: 50)])
    try await waitUntil("daemon log:\n\(log())") { signals.withLock { $0.count } >= 2 }
    #expect(signals.withLock { $0.map { $0.dropFirst().first?.string } } == ["batteryLow", "rebooted"])

    let entry = try #require(try await status())
    #expect(entry["deviceId"]?.stringValue == "UNIT-0042")
    #expect(entry["inRange"] == .bool(true))
    #expect(entry["batteryMv"]?.intValue == 2410)
    #expect(entry["batteryLow"] == .bool(true))
    #expect(entry["temperatureC"] == .double(22.25))
    #expect(entry["uptimeSeconds"]?.doubleValue == 5)
    #expect(entry["advertisingCount"]?.intValue == 3)
    #expect(entry["reboots"]?.intValue == 1)
    #expect(entry["measuredPower"] != nil)
    #expect(entry["lastSeenAgoSeconds"]?.doubleValue != nil)
    print("status --json pairedBeacons[0]: \(entry.compactText)")
    #expect(log().contains("paired beacon UNIT-0042"), "daemon log:\n\(log())")

    let doctor = try await cli.cli(
      ["doctor", "--json", "--config", config, "--state-dir", dir], bus: bus, dir: dir)
    let report = try JSONValue.parse(Data(doctor.stdout.utf8))
    let checks = report["checks"]?.arrayValue ?? []
    let named = { (name: String) in checks.first { $0["name"]?.stringValue == name } }
    #expect(named("beacon battery")?["status"]?.stringValue == "warning", "\(doctor.stdout)")
    #expect(
      named("beacon battery")?["detail"]?.stringValue?.contains("battery 2410 mV, below 2500 mV") == true)
    #expect(named("beacon reboot")?["status"]?.stringValue == "warning", "\(doctor.stdout)")

    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
  }
}
