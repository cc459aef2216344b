import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A backend that takes the request and never answers, or trickles its answer: every trip call
/// answers within a second, in realtime and in postTrip mode, and a trip's late window is kept
/// while a post hangs. Posting runs on its own task; no call and no deadline waits for it.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct HangingBackendTests {
  @Test(arguments: [("realtime", "hang"), ("postTrip", "hang"), ("realtime", "slow"), ("postTrip", "slow")])
  func tripCallsAnswerWhileAPostHangs(sending: String, fault: String) async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let backend = try await FakeBackend(["--always", fault, "--hang", "120"])
    let dir = try scratchDirectory("hanging-\(sending)-\(fault)")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    // The default 30 s timeout: past D-Bus's 25 s reply timeout, were a call to wait for a post.
    try """
    [Trips]
    unresolvedPolicy = hold
    lateWindow = 1
    sending = \(sending)
    [Upload]
    URL = \(backend.url.absoluteString)
    Timeout = 30
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let test = DaemonEndToEndTests()
    let bus = fixture.bus.address
    @Sendable func resolution(_ trip: String) async -> String? {
      guard let text = try? await test.cli(["status", "--json"], bus: bus, dir: dir).stdout,
        let status = try? JSONValue.parse(Data(text.utf8))
      else { return nil }
      return status["trips"]?.arrayValue?.first { $0["tripId"]?.stringValue == trip }?["resolution"]?
        .stringValue
    }
    /// Runs one trip call and says how long it took to answer.
    func timed(_ arguments: [String], stdin: String? = nil) async throws -> Double {
      let start = ContinuousClock.now
      let result = try await test.cli(arguments, bus: bus, dir: dir, stdin: stdin)
      #expect(result.status == 0, "\(arguments): \(result.stderr)")
      return (ContinuousClock.now - start).seconds
    }

    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    try await waitUntil("the daemon answers status", timeout: .seconds(20)) {
      (try? await test.cli(["status"], bus: bus, dir: dir).status) == 0
    }
    var answers: [(String, Double)] = []
    answers.append(("TripStart t1", try await timed(["trip", "start", "--trip-id", "t1"])))
    answers.append(
      (
        "TripEvents t1 (held)",
        try await timed(["trip", "events", "--trip-id", "t1", "-"], stdin: #"[{"type":"braking","n":0}]"#)
      ))
    // No beacon: held once its late window ends, then tagged by hand, which queues its batches.
    try await waitUntil("trip t1 is unresolved", timeout: .seconds(10)) {
      await resolution("t1") == "unresolved"
    }
    answers.append(
      ("TripAssign t1", try await timed(["trip", "assign", "--trip-id", "t1", "--device-id", "VAN-1"])))
    if sending == "realtime" {
      // The first post is in flight, and hangs.
      try await waitUntil("the backend has the first post", timeout: .seconds(10)) {
        !backend.received().isEmpty
      }
    }
    for n in 1...3 {
      answers.append(
        (
          "TripEvents t1 #\(n)",
          try await timed(
            ["trip", "events", "--trip-id", "t1", "-"], stdin: #"[{"type":"braking","n":\#(n)}]"#)
        ))
    }
    answers.append(("TripEnd t1", try await timed(["trip", "end", "--trip-id", "t1"])))
    if sending == "postTrip" {
      try await waitUntil("the backend has the first post", timeout: .seconds(10)) {
        !backend.received().isEmpty
      }
    }
    // With a post hanging: a new trip starts at once, and its late window ends on time.
    let started = ContinuousClock.now
    answers.append(("TripStart t2", try await timed(["trip", "start", "--trip-id", "t2"])))
    answers.append(
      (
        "TripEvents t2",
        try await timed(["trip", "events", "--trip-id", "t2", "-"], stdin: #"[{"type":"braking","n":0}]"#)
      ))
    try await waitUntil("trip t2 is unresolved", timeout: .seconds(10)) {
      await resolution("t2") == "unresolved"
    }
    let lateWindowEnded = (ContinuousClock.now - started).seconds
    answers.append(("TripEnd t2", try await timed(["trip", "end", "--trip-id", "t2"])))
    for (call, seconds) in answers {
      #expect(seconds < 1, "\(call) took \(seconds) s with a backend that does \(fault)")
    }
    // A 1 s late window, seen through `status` polls: well under the post's 30 s timeout.
    #expect(lateWindowEnded < 4, "the late window ended after \(lateWindowEnded) s")
    // Only the first post went out: it is still in flight, and nothing was lost or sent twice.
    #expect(backend.received().count == 1)
    let slowest = answers.max { $0.1 < $1.1 }!
    print("hanging backend (\(sending), \(fault)): slowest trip call \(slowest.0) \(slowest.1) s")
    let stopped = ContinuousClock.now
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
    print("hanging backend (\(sending), \(fault)): stopped in \((ContinuousClock.now - stopped).seconds) s")
  }
}
