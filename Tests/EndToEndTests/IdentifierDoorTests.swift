import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import Foundation
import Synchronization
import Testing

/// Identifiers at the process doors: the real `beaconbridge` binary's arguments (exit 64 and the
/// type's sentence), and the daemon's D-Bus methods on a private bus (InvalidArgs with the same
/// sentence, nothing clamped, nothing stored).
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct IdentifierDoorTests {
  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  /// Runs the binary with no bus behind it: these must fail while parsing, before any call.
  func run(_ arguments: [String]) async throws -> ProcessRun {
    try await runProcess(
      ScanCommandTests.binary, arguments,
      environment: [
        "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus",
        "BEACONBRIDGE_STATE_DIR": "/nonexistent/state",
      ])
  }

  @Test(arguments: [
    (
      ["trip", "start", "--trip-id", "t\r\n1"],
      #"--trip-id: trip ID "t\r\n1" contains the control or invisible character U+000D"#
    ),
    (["trip", "events", "--trip-id", "", "-"], "--trip-id needs a value, not an empty string"),
    (["trip", "end", "--trip-id", String(repeating: "t", count: 129)], "--trip-id: trip ID \"ttt"),
    (["trip", "retry", "--trip-id", "a b"], #"--trip-id: trip ID "a b" contains U+0020"#),
    (
      ["trip", "assign", "--trip-id", "t1", "--device-id", "X\u{1B}[2J"],
      #"--device-id: device ID "X\u{1B}[2J" contains the control or invisible character U+001B"#
    ),
    (
      ["trip", "assign", "--trip-id", "t\u{85}", "--device-id", "X"],
      #"--trip-id: trip ID "t\u{85}" contains the control or invisible character U+0085"#
    ),
    (
      ["pair", "--uuid", uuid, "--major", "70000", "--device-id", "X"],
      #"--major: major "70000" must be a whole number from 0 to 65535"#
    ),
    (
      ["pair", "--uuid", uuid, "--major", "1", "--minor", "-7", "--device-id", "X"],
      #"--minor: minor "-7" must be a whole number from 0 to 65535"#
    ),
    (["pair", "--uuid", uuid, "--major", "0x10", "--device-id", "X"], #"--major: major "0x10" must be"#),
    (
      ["pair", "--uuid", uuid, "--device-id", "A\u{2028}B"],
      #"--device-id: device ID "A\u{2028}B" contains the control or invisible character U+2028"#
    ),
    (
      ["pair", "--uuid", uuid, "--device-id", "X", "--label", "van\n7"], #"--label: label "van\n7" contains"#
    ),
    (["unpair", "--device-id", " X"], #"--device-id: device ID " X" starts or ends with a space"#),
    (["scan", "--adapter", "hci01"], #"--adapter: adapter "hci01" is not valid"#),
    (["replay", "capture.btsnoop", "--adapter", "hci10000"], #"--adapter: adapter "hci10000" is not valid"#),
    (
      ["pair", "--nearest", "--adapter", "wlan0", "--device-id", "X"],
      #"--adapter: adapter "wlan0" is not valid"#
    ),
    (
      ["replay", "capture.btsnoop", "--pair", "\(uuid):1:70000=X"],
      #"--pair: minor "70000" must be a whole number from 0 to 65535"#
    ),
  ])
  func cliRefusesWithUsage(argv: [String], message: String) async throws {
    let result = try await run(argv)
    #expect(result.status == 64, "\(result.stderr)")
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.hasPrefix("beaconbridge: " + message), "\(result.stderr)")
    // One message line and the hint: nothing forged.
    #expect(result.stderr.split(separator: "\n").count == 2, "\(result.stderr)")
  }

  /// The sentence a type gives for a value: what the CLI printed after its option name, and what
  /// D-Bus must answer.
  func sentence<T: ValidatedIdentifier>(_ type: T.Type, _ text: String) -> String {
    sentence { _ = try T(text) }
  }

  func sentence(_ build: () throws -> Void) -> String {
    do {
      try build()
      return "accepted"
    } catch {
      return "\(error)"
    }
  }

  @Test func dbusAnswersInvalidArgsWithTheSameSentence() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = try scratchDirectory("ids-dbus")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: fixture.bus.address)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let connection = try Connection(.address(fixture.bus.address))
    defer { connection.close() }
    @Sendable func call(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
      try await connection.call(
        destination: "org.beaconbridge", path: "/org/beaconbridge", interface: "org.beaconbridge.Bridge1",
        member: MemberName(member), arguments)
    }
    try await waitUntil("the daemon never answered") { (try? await call("Status", [])) != nil }

    let uuid = try #require(UUID(uuidString: Self.uuid))
    let refusals: [(String, [DBusValue], String)] = [
      (
        "Pair", [.string(Self.uuid), .int32(70000), .int32(1), .string("X"), .string("")],
        sentence { _ = try PairingIdentity(uuid: uuid, major: 70000, minor: 1) }
      ),
      (
        "Pair", [.string(Self.uuid), .int32(1), .int32(-7), .string("X"), .string("")],
        sentence { _ = try PairingIdentity(uuid: uuid, major: 1, minor: -7) }
      ),
      (
        "Pair", [.string(Self.uuid), .int32(-1), .int32(3), .string("X"), .string("")],
        sentence { _ = try PairingIdentity(uuid: uuid, major: nil, minor: 3) }
      ),
      (
        "Pair", [.string(Self.uuid), .int32(1), .int32(1), .string("A\nB"), .string("")],
        sentence(DeviceID.self, "A\nB")
      ),
      ("TripStart", [.string("t\r\n1")], sentence(TripID.self, "t\r\n1")),
      ("TripEvents", [.string("t\r\n1"), .string("[]")], sentence(TripID.self, "t\r\n1")),
      ("TripEnd", [.string("")], sentence(TripID.self, "")),
      ("TripRetry", [.string("a b")], sentence(TripID.self, "a b")),
      ("TripAssign", [.string("t1"), .string("X\u{1B}")], sentence(DeviceID.self, "X\u{1B}")),
      ("Unpair", [.string(" X")], sentence(DeviceID.self, " X")),
    ]
    for (member, arguments, message) in refusals {
      #expect(message != "accepted")
      do {
        _ = try await call(member, arguments)
        Issue.record("\(member) \(arguments) was accepted")
      } catch let error as DBusError {
        #expect(error.name == .invalidArgs, "\(member): \(error)")
        #expect(error.message == message, "\(member)")
      }
    }
    // -1 is the wire's wildcard, and a valid pairing is taken; none of the refused ones was stored.
    _ = try await call("Pair", [.string(Self.uuid), .int32(-1), .int32(-1), .string("FLEET"), .string("")])
    let listed = try await call("Pairings", [])
    let pairings = try JSONValue.parse(Data((listed.first?.string ?? "").utf8)).arrayValue ?? []
    #expect(pairings.count == 1, "\(pairings)")
    #expect(pairings.first?["deviceId"]?.stringValue == "FLEET")
    #expect(pairings.first?["major"] == .null)
    #expect(pairings.first?["minor"] == .null)

    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
  }
}
