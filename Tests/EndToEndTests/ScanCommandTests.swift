import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Synchronization
import Testing

/// `beaconbridge scan` as a user runs it: the real binary, against python-dbusmock's BlueZ on a
/// private bus named by DBUS_SYSTEM_BUS_ADDRESS.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct ScanCommandTests {
  static var binary: String {
    var root = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { root.deleteLastPathComponent() }
    return root.appendingPathComponent(".build/debug/beaconbridge").path
  }

  func launch(_ arguments: [String], bus: String) throws -> (Process, Pipe, Pipe) {
    struct NotBuilt: Error, CustomStringConvertible {
      var description: String { "\(ScanCommandTests.binary) is missing: run 'swift build' first" }
    }
    guard FileManager.default.isExecutableFile(atPath: Self.binary) else { throw NotBuilt() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Self.binary)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
    environment["BEACONBRIDGE_STATE_DIR"] =
      FileManager.default.temporaryDirectory
      .appendingPathComponent("bb-scan-\(UUID().uuidString)").path
    process.environment = environment
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    return (process, out, err)
  }

  @Test func ctrlCStopsTheScanAndPutsTheRadioBack() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let (process, _, err) = try launch(["scan", "--json"], bus: fixture.bus.address)
    try await waitUntil("StartDiscovery", timeout: .seconds(20), poll: .milliseconds(50)) {
      try await fixture.adapterCalls("hci0").contains("StartDiscovery")
    }
    // At once: the scan may still be starting (StartDiscovery sent, its reply on the way).
    kill(process.processIdentifier, SIGINT)
    #expect(await waitForExit(process, seconds: 10), "SIGINT did not stop the scan")
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationReason == .exit && process.terminationStatus == 0, "stderr: \(stderr)")
    try await waitUntil("stderr: \(stderr)", timeout: .seconds(10)) {
      try await fixture.adapterCalls("hci0").contains("StopDiscovery")
    }
  }

  @Test func scanJSONListsTheAdvertisedBeacon() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    // No fixed duration: on a loaded machine dbusmock's calls alone can take seconds. The scan
    // runs until its beaconEntered line is out, then Ctrl-C ends it.
    let (process, out, err) = try launch(["scan", "--json"], bus: fixture.bus.address)
    let collected = Mutex(Data())
    out.fileHandleForReading.readabilityHandler = { handle in
      let chunk = handle.availableData
      collected.withLock { $0.append(chunk) }
    }
    // Wait until it scans, then advertise.
    try await waitUntil("StartDiscovery", timeout: .seconds(20), poll: .milliseconds(50)) {
      try await fixture.adapterCalls("hci0").contains("StartDiscovery")
    }
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    try await fixture.advertise(device, ["ManufacturerData": iBeaconManufacturerData(), "RSSI": .int16(-61)])
    try await waitUntil("a beaconEntered line", timeout: .seconds(30), poll: .milliseconds(50)) {
      collected.withLock { String(decoding: $0, as: UTF8.self) }.contains("beaconEntered")
    }
    kill(process.processIdentifier, SIGINT)
    #expect(await waitForExit(process), "process did not exit in time")
    out.fileHandleForReading.readabilityHandler = nil
    let rest = out.fileHandleForReading.readDataToEndOfFile()
    let stdout = collected.withLock { String(decoding: $0 + rest, as: UTF8.self) }
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 0, "stderr: \(stderr)")
    let lines = try stdout.split(separator: "\n").map { try JSONValue.parse(Data($0.utf8)) }
    let entered = try #require(
      lines.first { $0["type"]?.stringValue == "beaconEntered" }, "stdout: \(stdout)")
    #expect(entered["uuid"]?.stringValue == "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
    #expect(entered["major"]?.intValue == 1)
    #expect(entered["minor"]?.intValue == 7)
    #expect(entered["address"]?.stringValue == beaconAddress.description)
  }

  @Test func noBluetoothdIsAClearError() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let (process, _, err) = try launch(["scan", "--duration", "2"], bus: bus.address)
    #expect(await waitForExit(process), "process did not exit in time")
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 1)
    #expect(stderr.contains("bluetoothd is not running"), "stderr: \(stderr)")
    #expect(stderr.contains("--backend hci"))
  }

  @Test func noAdapterIsAClearError() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    let (process, _, err) = try launch(
      ["scan", "--duration", "2", "--adapter", "hci3"], bus: fixture.bus.address)
    #expect(await waitForExit(process), "process did not exit in time")
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 1)
    #expect(stderr.contains("btmgmt info"), "stderr: \(stderr)")
  }
}

/// `pair --nearest` without a daemon: it scans, shows its choice, and pairs the strongest.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct PairNearestTests {
  func iBeacon(minor: UInt8) -> DBusValue {
    .dictionary(
      key: "q", value: "v",
      [.init(.uint16(0x004C), .variant(.bytes(Array(iBeaconBytes.prefix(20)) + [0x00, minor, 0xC5])))])
  }

  func run(rssi: (Int16, Int16)) async throws -> (
    status: Int32, stderr: String, pairs: String, pairsError: String
  ) {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = scratchPath("nearest")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ScanCommandTests.binary)
    process.arguments = ["pair", "--nearest", "--wait", "10", "--device-id", "UNIT-9", "--state-dir", dir]
    var environment = ProcessInfo.processInfo.environment
    environment["DBUS_SYSTEM_BUS_ADDRESS"] = fixture.bus.address
    process.environment = environment
    let err = Pipe()
    process.standardError = err
    process.standardOutput = Pipe()
    try process.run()
    try await waitUntil("StartDiscovery", timeout: .seconds(20), poll: .milliseconds(50)) {
      try await fixture.adapterCalls("hci0").contains("StartDiscovery")
    }
    let near = try await fixture.addDevice("hci0", "C0:FF:EE:00:00:07")
    let far = try await fixture.addDevice("hci0", "C0:FF:EE:00:00:09")
    for _ in 0..<3 {
      try await fixture.advertise(near, ["ManufacturerData": iBeacon(minor: 7), "RSSI": .int16(rssi.0)])
      try await fixture.advertise(far, ["ManufacturerData": iBeacon(minor: 9), "RSSI": .int16(rssi.1)])
      try await Task.sleep(for: .milliseconds(300))
    }
    #expect(await waitForExit(process), "process did not exit in time")
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let list = Process()
    list.executableURL = URL(fileURLWithPath: ScanCommandTests.binary)
    list.arguments = ["pairs", "--json", "--state-dir", dir]
    let out = Pipe()
    list.standardOutput = out
    let listError = Pipe()
    list.standardError = listError
    try list.run()
    list.waitUntilExit()
    return (
      process.terminationStatus, stderr,
      String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
      String(decoding: listError.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    )
  }

  @Test func pairsTheStrongestAndSaysWhy() async throws {
    let result = try await run(rssi: (-52, -75))
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains("chose E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 1/7"), "\(result.stderr)")
    #expect(result.stderr.contains("dB weaker"))
    let pairs = try JSONValue.parse(Data(result.pairs.utf8)).arrayValue ?? []
    #expect(pairs.count == 1)
    #expect(pairs.first?["minor"]?.intValue == 7)
    #expect(pairs.first?["deviceId"]?.stringValue == "UNIT-9")
  }

  @Test func refusesWhenTooCloseToCall() async throws {
    let result = try await run(rssi: (-60, -61))
    #expect(result.status == 1)
    #expect(result.stderr.contains("too close to call"), "\(result.stderr)")
    // The refusal wrote nothing: no store was made, and `pairs`, which only reads, says so.
    #expect(result.pairs.isEmpty)
    #expect(result.pairsError.contains("was not found"), "\(result.pairsError)")
  }
}
