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

/// `beaconbridge provision` as users run it: the real binary against bluetoothd's stand-in
/// (python-dbusmock's bluez5 template) with a peripheral that serves the Eddystone Configuration
/// Service under its device and computes with the crypto oracle (Tests/Support/
/// eddystone_peripheral.py). A wrong lock key and a beacon that refuses the registration pair
/// nothing; a good run pairs the beacon, and the daemon then tags a trip with it,
/// authentication "eid". No output holds the lock key or the identity key.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct ProvisionEndToEndTests {
  static let lockKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
  static let beaconPrivate = String(repeating: "5a", count: 31) + "17"
  static let support = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

  /// A device with the peripheral's service under it.
  func peripheral(_ fixture: BlueZFixture, _ address: String, fault: String = "") async throws -> ObjectPath {
    let device = try await fixture.addDevice("hci0", address)
    _ = try await fixture.control.call(
      destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.Mock", member: "AddTemplate",
      [
        .string(Self.support.appendingPathComponent("Support/eddystone_peripheral.py").path),
        .stringVariantDictionary([
          "device": .string(device.rawValue),
          "oracle": .string(Self.support.appendingPathComponent("Crypto/oracle.py").path),
          "lockKey": .string(Self.lockKey), "beaconPrivate": .string(Self.beaconPrivate),
          "fault": .string(fault),
        ]),
      ])
    return device
  }

  func testBeacon(_ fixture: BlueZFixture, _ device: ObjectPath, _ member: MemberName) async throws
    -> DBusValue
  {
    try await fixture.control.callReturningOne(
      destination: "org.bluez", path: device, interface: "org.beaconbridge.TestBeacon", member: member)
  }

  @Test func aProvisionedBeaconTagsATripAndFailuresPairNothing() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = try scratchDirectory("provision-e2e")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let lockFile = dir + "/lock.key"
    try (Self.lockKey + "\n").write(toFile: lockFile, atomically: true, encoding: .utf8)
    #expect(chmod(lockFile, 0o600) == 0)
    let wrongFile = dir + "/wrong.key"
    try String(repeating: "0", count: 32).write(toFile: wrongFile, atomically: true, encoding: .utf8)
    #expect(chmod(wrongFile, 0o600) == 0)
    let cli = DaemonEndToEndTests()
    let bus = fixture.bus.address
    var outputs = ""
    func provision(_ address: String, _ key: String, json: Bool = true) async throws -> ProcessRun {
      let result = try await cli.cli(
        [
          "provision", "--address", address, "--lock-key-file", key, "--rotation-exponent", "10",
          "--device-id", "UNIT-P1", "--label", "van 7", "--state-dir", dir, "--wait", "1",
        ] + (json ? ["--json"] : []), bus: bus, dir: dir)
      outputs += result.stdout + result.stderr
      return result
    }
    func pairs() async throws -> String {
      let result = try await cli.cli(["pairs", "--json", "--state-dir", dir], bus: bus, dir: dir)
      outputs += result.stdout + result.stderr
      return result.stdout
    }

    // A wrong lock key: refused at the unlock, nothing paired, the beacon still locked.
    let good = try await peripheral(fixture, "C0:FF:EE:00:0E:02")
    let wrong = try await provision("C0:FF:EE:00:0E:02", wrongFile)
    #expect(wrong.status == 1)
    #expect(
      wrong.stderr.contains("provision: unlocking: the beacon refused the unlock token"), "\(wrong.stderr)")
    #expect(wrong.stderr.contains("the lock key is wrong"), "\(wrong.stderr)")
    #expect(try await testBeacon(fixture, good, "Locked").bool == true)
    #expect(!(try await pairs()).contains("UNIT-P1"))

    // A beacon that answers the registration with an error: nothing paired, relocked.
    let refusing = try await peripheral(fixture, "C0:FF:EE:00:0E:03", fault: "register")
    let refused = try await provision("C0:FF:EE:00:0E:03", lockFile)
    #expect(refused.status == 1)
    #expect(
      refused.stderr.contains("provision: writing the EID registration: the beacon refused the registration"),
      "\(refused.stderr)")
    #expect(try await testBeacon(fixture, refusing, "Locked").bool == true)
    #expect(!(try await pairs()).contains("UNIT-P1"))

    // No such device (not heard within --wait): nothing paired.
    let missing = try await provision("C0:FF:EE:00:0E:09", lockFile)
    #expect(missing.status == 1)
    #expect(
      missing.stderr.contains("provision: connecting: no device C0:FF:EE:00:0E:09"), "\(missing.stderr)")

    // The good run.
    let done = try await provision("C0:FF:EE:00:0E:02", lockFile)
    #expect(done.status == 0, "\(done.stderr)")
    let reply = try JSONValue.parse(Data(done.stdout.utf8))
    #expect(reply["address"]?.stringValue == "C0:FF:EE:00:0E:02", "\(done.stdout)")
    #expect(reply["rotationExponent"]?.intValue == 10)
    #expect(reply["method"]?.stringValue == "key exchange")
    #expect(reply["pairing"]?["deviceId"]?.stringValue == "UNIT-P1", "\(done.stdout)")
    #expect(try await testBeacon(fixture, good, "Locked").bool == true, "relocked")
    let identityKey = try #require(try await testBeacon(fixture, good, "IdentityKey").string)
    #expect(identityKey.count == 32)
    #expect(try await pairs().contains("UNIT-P1"))

    // The daemon hears the beacon's EID (as the peripheral computes it now) and tags a trip.
    let config = dir + "/beaconbridge.conf"
    try "[ActiveBeacon]\ndwellSeconds = 0.5\nrequireAuthenticated = true\n".write(
      toFile: config, atomically: true, encoding: .utf8)
    let logPath = dir + "/daemon.log"
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, log: logPath)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    try await waitUntil("daemon log:\n\(log())") { log().contains("ready: serving") }
    let status: @Sendable () async throws -> JSONValue? = {
      let result = try await cli.cli(["status", "--json"], bus: bus, dir: dir)
      return try? JSONValue.parse(Data(result.stdout.utf8))
    }
    try await waitUntil("daemon log:\n\(log())") {
      let frame = try await testBeacon(fixture, good, "ServiceData")
      let serviceData: DBusValue = .dictionary(
        key: "s", value: "v", [.init(.string(ServiceUUID.eddystone.description), .variant(frame))])
      try await fixture.advertise(good, ["ServiceData": serviceData, "RSSI": .int16(-60)])
      return try await status()?["activeBeacon"]?["authentication"]?.stringValue == "eid"
    }
    let started = try await cli.cli(["trip", "start", "--trip-id", "t1", "--json"], bus: bus, dir: dir)
    #expect(started.status == 0, "\(started.stderr)")
    let trip = try JSONValue.parse(Data(started.stdout.utf8))
    #expect(trip["deviceId"]?.stringValue == "UNIT-P1", "\(started.stdout)")
    #expect(trip["authentication"]?.stringValue == "eid", "\(started.stdout)")
    outputs += started.stdout + started.stderr + log()

    for key in [Self.lockKey, identityKey] {
      #expect(!outputs.lowercased().contains(key.lowercased()))
    }
  }
}
