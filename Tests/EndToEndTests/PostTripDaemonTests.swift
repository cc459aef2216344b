import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `[Trips] sending = postTrip` through the daemon: batches are committed as they arrive,
/// `status` shows them waiting for the trip's end, a SIGKILL in the middle loses none, and
/// `trip end` posts them, in order, once each.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct PostTripDaemonTests {
  @Test func batchesWaitForTheTripsEndAndSurviveAKill() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let backend = try await FakeBackend()
    let dir = try scratchDirectory("post-trip")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try """
    [Trips]
    unresolvedPolicy = fallback
    fallbackDeviceId = SERIAL-9
    lateWindow = 0
    sending = postTrip
    [Upload]
    URL = \(backend.url.absoluteString)
    postRetryInitial = 0.1
    postRetryMax = 0.5
    Timeout = 5
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let test = DaemonEndToEndTests()
    let bus = fixture.bus.address
    @Sendable func status() async throws -> JSONValue {
      try JSONValue.parse(Data(try await test.cli(["status", "--json"], bus: bus, dir: dir).stdout.utf8))
    }
    @Sendable func waiting(_ status: JSONValue) -> Int64? {
      status["trips"]?.arrayValue?.first { $0["tripId"]?.stringValue == "t1" }?["waitingForEnd"]?.intValue
    }

    var daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await test.cli(["status"], bus: bus, dir: dir).status) == 0
    }
    #expect(try await test.cli(["trip", "start", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    for n in 0..<5 {
      let sent = try await test.cli(
        ["trip", "events", "--trip-id", "t1", "-"], bus: bus, dir: dir,
        stdin: #"[{"type":"braking","n":\#(n)}]"#)
      #expect(sent.status == 0)
    }
    // Tagged (the fallback, at once) and committed, but waiting: the backend has seen nothing.
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await status()).flatMap(waiting) == 5
    }
    let before = try await status()
    #expect(before["outbox"]?["undelivered"]?.intValue == 5)
    #expect(
      try await test.cli(["status"], bus: bus, dir: dir).stdout.contains("5 waiting for the trip's end"))
    #expect(backend.received().isEmpty)
    // libcurl (and its TLS libraries) are never loaded into the daemon: each request runs in a
    // child process (docs/PERFORMANCE.md, "Where the daemon's memory goes").
    #expect(!(try maps(daemon)).contains("/libcurl.so"))

    // A crash in the middle of the trip loses nothing, and does not send the batches early.
    kill(daemon.processIdentifier, SIGKILL)
    #expect(await waitForExit(daemon))
    daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus)
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await status()).flatMap(waiting) == 5
    }
    #expect(backend.received().isEmpty)
    let more = try await test.cli(
      ["trip", "events", "--trip-id", "t1", "-"], bus: bus, dir: dir, stdin: #"[{"type":"braking","n":5}]"#)
    #expect(more.status == 0)

    #expect(try await test.cli(["trip", "end", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    try await waitUntil("the condition at this line", timeout: .seconds(30)) {
      backend.received().filter { $0.status == "200" }.count >= 6
    }
    let delivered = backend.received().filter { $0.status == "200" }
    #expect(delivered.compactMap { $0.body["sequence"]?.intValue } == [0, 1, 2, 3, 4, 5])
    #expect(delivered.compactMap(\.key) == (0..<6).map { "t1#\($0)" })
    #expect(delivered.allSatisfy { $0.body["deviceId"]?.stringValue == "SERIAL-9" })
    // Six batches delivered, and still no libcurl in the daemon.
    #expect(!(try maps(daemon)).contains("/libcurl.so"))
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
  }
}

/// The libraries a process has mapped.
func maps(_ process: Process) throws -> String {
  // Read to the end: a /proc file says it is empty, so a reader that trusts its size stops early.
  let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(process.processIdentifier)/maps"))
  defer { try? handle.close() }
  return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
}
