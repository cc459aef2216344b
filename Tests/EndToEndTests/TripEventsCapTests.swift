import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import Foundation
import Testing

/// The daemon's `TripEvents` has the CLI's 16 MiB cap, checked on the text's length before it is
/// decoded: a larger batch is refused with InvalidArgs and a sentence that says the
/// size and the cap, whatever the text holds; a batch within the cap is taken. And a trip start
/// past `[Trips] maxOpenTrips` is refused with one sentence over D-Bus and the CLI.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct TripEventsCapTests {
  @Test func anOverCapBatchIsRefusedBeforeDecoding() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = try scratchDirectory("trip-events-cap")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "[Trips]\nmaxOpenTrips = 1\n".write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: fixture.bus.address)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let connection = try Connection(.address(fixture.bus.address))
    defer { connection.close() }
    @Sendable func call(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
      try await connection.call(
        destination: "org.beaconbridge", path: "/org/beaconbridge", interface: "org.beaconbridge.Bridge1",
        member: MemberName(member), arguments)
    }
    try await waitUntil("the daemon answering Status") { (try? await call("Status", [])) != nil }
    _ = try await call("TripStart", [.string("cap-1")])

    // Valid JSON up to the cap, then one byte more that is not: were it decoded first, the answer
    // would be a JSON error; the cap answers first.
    let event = #"{"type":"braking","pad":""#
    let cap = TripEventBatch.maximumJSONBytes
    #expect(cap == 16 << 20)
    let head = "[" + event
    let tail = #""}]"#
    let padding = String(repeating: "x", count: cap - head.utf8.count - tail.utf8.count)
    let atCap = head + padding + tail
    #expect(atCap.utf8.count == cap)
    let overCap = head + padding + "x" + tail
    #expect(overCap.utf8.count == cap + 1)
    do {
      _ = try await call("TripEvents", [.string("cap-1"), .string(overCap)])
      Issue.record("an over-cap batch was accepted")
    } catch let error as DBusError {
      #expect(error.name == .invalidArgs, "\(error)")
      #expect(error.message == TripEventBatch.refusal(jsonBytes: cap + 1))
      #expect(error.message.contains("16 MiB"), "\(error)")
    }
    // Not valid JSON, and over the cap: the same refusal, so nothing was decoded.
    let garbage = String(repeating: "{", count: cap + 10)
    do {
      _ = try await call("TripEvents", [.string("cap-1"), .string(garbage)])
      Issue.record("an over-cap garbage batch was accepted")
    } catch let error as DBusError {
      #expect(error.name == .invalidArgs, "\(error)")
      #expect(error.message == TripEventBatch.refusal(jsonBytes: cap + 10))
    }
    // Within the cap: taken (the boundary itself: `TripTaggingTests`).
    let accepted = try await call("TripEvents", [.string("cap-1"), .string(#"[{"type":"braking"}]"#)])
    #expect(accepted.first == .uint32(1))

    // The open-trip cap (`[Trips] maxOpenTrips = 1`): the same sentence over D-Bus and the CLI.
    let sentence =
      "trip cap-2 not started: 1 trips are open, the most [Trips] maxOpenTrips allows; end one with 'trip end', or raise maxOpenTrips"
    do {
      _ = try await call("TripStart", [.string("cap-2")])
      Issue.record("a second trip started past maxOpenTrips = 1")
    } catch let error as DBusError {
      #expect(error.name.rawValue == "org.beaconbridge.Error.Trip", "\(error)")
      #expect(error.message.contains(sentence), "\(error)")
    }
    let cli = try await runProcess(
      ScanCommandTests.binary, ["trip", "start", "--trip-id", "cap-2"],
      environment: ["DBUS_SYSTEM_BUS_ADDRESS": fixture.bus.address, "BEACONBRIDGE_STATE_DIR": dir], stdin: "")
    #expect(cli.status == 1, "\(cli.stdout) \(cli.stderr)")
    #expect(cli.stderr.contains(sentence), "\(cli.stderr)")
    _ = try await call("TripEnd", [.string("cap-1")])
    _ = try await call("TripStart", [.string("cap-2")])

    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
  }
}
