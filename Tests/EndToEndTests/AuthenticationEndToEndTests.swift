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

/// Pairing by key end to end: `pair --eid-key-file` into the store, the daemon on a private
/// dbus-daemon with the dbusmock BlueZ, an Eddystone-EID frame (the crypto oracle's, from
/// Tests/Crypto/vectors.json) heard through BlueZ's ServiceData, a trip tagged with
/// authentication "eid"; then `pair --irk-file` through the running daemon's PairWithKey. No
/// output, and not the daemon's log, holds a key.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct AuthenticationEndToEndTests {
  @Test func anEIDBeaconTagsATripThroughBlueZAndNoOutputHoldsAKey() async throws {
    let vector = try OracleVectors.firstEID()
    let (identityKey, k, clock, eid) = (
      vector.identityKey, vector.rotationExponent, vector.beaconClock, vector.eid
    )
    // The vector's window is [clock with its K low bits cleared, + 2^K): a beacon paired at
    // `clock` keeps this EID for the rest of that window, long enough for the test.
    #expect(clock % (1 << k) < (1 << k) - 120)
    let irk = "ec0234a357c8ad05341010a60a397d9b"

    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = try scratchDirectory("auth-e2e")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "[ActiveBeacon]\ndwellSeconds = 0.5\nrequireAuthenticated = true\n".write(
      toFile: config, atomically: true, encoding: .utf8)
    let keyFile = dir + "/eid.key"
    try (identityKey + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
    #expect(chmod(keyFile, 0o600) == 0)
    let irkFile = dir + "/irk.key"
    try irk.write(toFile: irkFile, atomically: true, encoding: .utf8)
    #expect(chmod(irkFile, 0o600) == 0)

    let cli = DaemonEndToEndTests()
    let bus = fixture.bus.address
    var outputs = ""
    let paired = try await cli.cli(
      [
        "pair", "--eid-key-file", keyFile, "--rotation-exponent", String(k), "--beacon-clock", String(clock),
        "--device-id", "UNIT-E1", "--label", "driver tag", "--state-dir", dir,
      ], bus: bus, dir: dir)
    #expect(paired.status == 0, "\(paired.stderr)")
    outputs += paired.stdout + paired.stderr

    let logPath = dir + "/daemon.log"
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, log: logPath)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    try await waitUntil("daemon log:\n\(log())") { log().contains("ready: serving") }
    // The TripTagged signal says how the trip's beacon was proven.
    let watcher = try Connection(.address(bus))
    defer { watcher.close() }
    let subscription = try await watcher.subscribe(
      to: MatchRule(interface: "org.beaconbridge.Bridge1", member: "TripTagged"))
    let tagged = Mutex<[[DBusValue]]>([])
    let reader = Task {
      for await batch in subscription.batches { tagged.withLock { $0 += batch.map(\.body) } }
    }
    defer { reader.cancel() }

    let serviceData: DBusValue = .dictionary(
      key: "s", value: "v",
      [.init(.string(ServiceUUID.eddystone.description), .variant(.bytes([0x30, 0xEB] + eid)))])
    let device = try await fixture.addDevice("hci0", "C0:FF:EE:00:0E:01")
    let status: @Sendable () async throws -> (JSONValue?, String) = {
      let result = try await cli.cli(["status", "--json"], bus: bus, dir: dir)
      return (try? JSONValue.parse(Data(result.stdout.utf8)), result.stdout + result.stderr)
    }
    try await waitUntil("daemon log:\n\(log())") {
      try await fixture.advertise(device, ["ServiceData": serviceData, "RSSI": .int16(-60)])
      return try await status().0?["activeBeacon"]?["authentication"]?.stringValue == "eid"
    }
    let started = try await cli.cli(["trip", "start", "--trip-id", "t1", "--json"], bus: bus, dir: dir)
    #expect(started.status == 0, "\(started.stderr)")
    let trip = try JSONValue.parse(Data(started.stdout.utf8))
    #expect(trip["deviceId"]?.stringValue == "UNIT-E1", "\(started.stdout)")
    #expect(trip["authentication"]?.stringValue == "eid", "\(started.stdout)")
    try await waitUntil("TripTagged signals: \(tagged.withLock { $0 })") { tagged.withLock { !$0.isEmpty } }
    let signal = try #require(tagged.withLock { $0.first })
    #expect(signal.map(\.string) == ["t1", "UNIT-E1", "activeAtStart", "eid"], "\(signal)")
    #expect(log().contains("trip t1 tagged UNIT-E1 (activeAtStart, authentication eid)"), "\(log())")
    let (json, text) = try await status()
    #expect(json?["pairedBeacons"]?.arrayValue?.first?["authentication"]?.stringValue == "eid")
    outputs += started.stdout + text

    // A pairing by key through the running daemon (PairWithKey).
    let byBus = try await cli.cli(
      ["pair", "--irk-file", irkFile, "--device-id", "UNIT-R1", "--json"], bus: bus, dir: dir)
    #expect(byBus.status == 0, "\(byBus.stderr)")
    #expect(try JSONValue.parse(Data(byBus.stdout.utf8))["authentication"]?.stringValue == "rpa")
    let pairs = try await cli.cli(["pairs", "--json"], bus: bus, dir: dir)
    #expect(pairs.stdout.contains("UNIT-R1") && pairs.stdout.contains("UNIT-E1"), "\(pairs.stdout)")
    let doctor = try await cli.cli(
      ["doctor", "--json", "--config", config, "--state-dir", dir], bus: bus, dir: dir)
    outputs +=
      byBus.stdout + byBus.stderr + pairs.stdout + pairs.stderr + doctor.stdout + doctor.stderr + log()

    for key in [identityKey, irk] {
      #expect(!outputs.lowercased().contains(key.lowercased()))
    }
  }
}
