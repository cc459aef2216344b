import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A flood of strangers' EIDs against a daemon with 200 EID pairings at K = 0 and a day of
/// tolerance (one search over them all is 200 × 172,810 AES operations): the searches run off
/// the bridge's executor (`EIDSearchService`), so `Status` and `TripStart` answer within 100 ms
/// (95% of them, and all within a second, on a machine shared with other work) and SIGTERM stops
/// the daemon within 1 s while the flood goes on. The real daemon as a
/// process, on a private dbus-daemon with the dbusmock BlueZ.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct EIDFloodTests {
  static let pairings = 200

  @Test func aFloodOfStrangersEIDsStallsNeitherTheAPINorAStop() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = try scratchDirectory("eid-flood")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "[ActiveBeacon]\neidClockTolerance = 86400\n".write(toFile: config, atomically: true, encoding: .utf8)
    let bus = fixture.bus.address
    let cli = DaemonEndToEndTests()
    var generator = SystemRandomNumberGenerator()
    for n in 0..<Self.pairings {
      let keyFile = dir + "/eid-\(n).key"
      let key = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }
        .joined()
      try (key + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
      #expect(chmod(keyFile, 0o600) == 0)
      let paired = try await cli.cli(
        [
          "pair", "--eid-key-file", keyFile, "--rotation-exponent", "0", "--beacon-clock", "1000",
          "--device-id", "UNIT-\(n)", "--state-dir", dir,
        ], bus: bus, dir: dir)
      try #require(paired.status == 0, "\(paired.stderr)")
      try FileManager.default.removeItem(atPath: keyFile)
    }

    let logPath = dir + "/daemon.log"
    var daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, log: logPath)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    let connection = try Connection(.address(bus))
    defer { connection.close() }
    @Sendable func call(_ member: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
      try await connection.call(
        destination: "org.beaconbridge", path: "/org/beaconbridge", interface: "org.beaconbridge.Bridge1",
        member: MemberName(member), arguments)
    }
    try await waitUntil("the daemon answering Status; log:\n\(log())") { (try? await call("Status")) != nil }

    // Twenty transmitters, each sending a new random EID at every advertisement, up to 25 a
    // second each (as fast as the mock BlueZ takes them, on a loaded machine).
    var devices: [ObjectPath] = []
    for n in 0..<20 {
      devices.append(try await fixture.addDevice("hci0", String(format: "C0:FF:EE:00:F1:%02X", n)))
    }
    let sent = Mutex(0)
    let flood = Task {
      var random = SystemRandomNumberGenerator()
      while !Task.isCancelled {
        for device in devices {
          let eid = (0..<8).map { _ in UInt8.random(in: 0...255, using: &random) }
          let serviceData: DBusValue = .dictionary(
            key: "s", value: "v",
            [.init(.string(ServiceUUID.eddystone.description), .variant(.bytes([0x30, 0xEB] + eid)))])
          try? await fixture.advertise(device, ["ServiceData": serviceData, "RSSI": .int16(-60)])
          sent.withLock { $0 += 1 }
        }
        try? await Task.sleep(for: .milliseconds(40))
      }
    }
    defer { flood.cancel() }

    // From the flood's first EID on, for 8 s: Status every 50 ms, a trip started and ended every
    // second. Were a search on the bridge's executor, the first stranger's EID would hold them.
    var statusTimes: [Duration] = []
    var tripTimes: [Duration] = []
    let until = ContinuousClock.now + .seconds(8)
    var trips = 0
    while ContinuousClock.now < until {
      var started = ContinuousClock.now
      _ = try await call("Status")
      statusTimes.append(ContinuousClock.now - started)
      if statusTimes.count % 20 == 0 {
        started = ContinuousClock.now
        _ = try await call("TripStart", [.string("flood-\(trips)")])
        tripTimes.append(ContinuousClock.now - started)
        _ = try await call("TripEnd", [.string("flood-\(trips)")])
        trips += 1
      }
      try await Task.sleep(for: .milliseconds(50))
    }
    // The flood reached the bridge: its EIDs are counted as EID frames no pairing makes.
    let status = try JSONValue.parse(Data((try await call("Status").first?.string ?? "").utf8))
    let heard = Int(status["ignoredFrames"]?["eddystoneEID"]?.intValue ?? 0)
    #expect(heard >= 200, "\(heard) strangers' EIDs heard")
    let slowestStatus = statusTimes.max() ?? .zero
    let slowestTrip = tripTimes.max() ?? .zero
    print(
      "EIDFloodTests: \(Self.pairings) pairings at K = 0, \(sent.withLock { $0 }) EIDs sent, \(heard) heard; \(statusTimes.count) Status, slowest \(slowestStatus); \(tripTimes.count) TripStart, slowest \(slowestTrip)"
    )
    // At a call every 50 ms, 8 s hold about 150 Status calls and 7 trips when nothing waits.
    #expect(statusTimes.count >= 100 && tripTimes.count >= 5)
    // Within 100 ms, but for the scheduling noise of a machine the test shares (other builds):
    // 95% of the calls, and every one within a second. A search on the bridge held them for
    // seconds (docs/authentication.md).
    let sorted = statusTimes.sorted()
    let p95 = sorted.isEmpty ? .zero : sorted[(sorted.count * 95) / 100 - (sorted.count >= 20 ? 1 : 0)]
    print("EIDFloodTests: Status 95th percentile \(p95)")
    #expect(p95 < .milliseconds(100), "Status took \(statusTimes)")
    #expect(slowestStatus < .seconds(1), "Status took \(statusTimes)")
    #expect(
      tripTimes.sorted().dropLast().allSatisfy { $0 < .milliseconds(100) }, "TripStart took \(tripTimes)")
    #expect(slowestTrip < .seconds(1), "TripStart took \(tripTimes)")

    // SIGTERM during the flood.
    @Sendable func stop(_ daemon: Process) async throws -> Duration {
      let stopping = ContinuousClock.now
      kill(daemon.processIdentifier, SIGTERM)
      try await waitUntil("the daemon stopping; log:\n\(log())", timeout: .seconds(60)) { !daemon.isRunning }
      return ContinuousClock.now - stopping
    }
    let stopped = try await stop(daemon)
    #expect(daemon.terminationStatus == 0, "\(log())")
    // And again 1 s after a start into the flood, when the first strangers' EIDs are searched.
    daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, log: logPath)
    try await waitUntil("the daemon ready again; log:\n\(log())") { log().contains("ready: serving") }
    try await Task.sleep(for: .seconds(1))
    let stoppedEarly = try await stop(daemon)
    print("EIDFloodTests: SIGTERM to exit \(stopped), and \(stoppedEarly) 1 s after a start")
    // Under a flood a stop takes at most a second (any stop: 5 s, StopTimingTests).
    #expect(stopped < .seconds(1) && stoppedEarly < .seconds(1))
  }
}
