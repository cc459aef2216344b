import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The outbox stays in SQLite: with 100,000 batches waiting, the daemon's RSS stays within 2 MB
/// of its RSS with none, at start, after a restart (which does not load them) and after they
/// have drained.
///
/// The batches are written into the store while the daemon is stopped (one transaction, as the
/// daemon would have queued them over days offline), for an open trip in postTrip mode, so they
/// wait. A SIGHUP to realtime makes them due; their sequence numbers are negative, which no
/// Idempotency-Key can carry, so each is dead-lettered at its post without a request
/// (`UploadPayload`): the drain goes through the queue's window, the post and the journal as a
/// delivery does, without 100,000 HTTP requests. (A trip ID that breaks the identifier rule would
/// not do: such rows are dead-lettered when the outbox loads, so they never wait.)
@Suite(.tags(.process), .timeLimit(.minutes(10)))
struct BacklogMemoryTests {
  static let batches = 100_000

  @Test func rssDoesNotGrowWithTheBacklog() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    // On tmpfs where there is one: 100,000 commits with fsync would time the disk, not the queue.
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    let dir = base + "/beaconbridge-backlog-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // Nothing listens there: the upload never succeeds.
    let port = try await FakeBackend().port
    let config = dir + "/beaconbridge.conf"
    func configure(_ sending: String) throws {
      try """
      [Trips]
      unresolvedPolicy = fallback
      fallbackDeviceId = DEPOT-7
      lateWindow = 0
      sending = \(sending)
      [Upload]
      URL = http://127.0.0.1:\(port)/trips
      postRetryInitial = 0.1
      postRetryMax = 0.5
      Timeout = 5
      [Outbox]
      MaxBatches = 200000
      """.write(toFile: config, atomically: true, encoding: .utf8)
    }
    try configure("postTrip")
    let test = DaemonEndToEndTests()
    let bus = fixture.bus.address
    @Sendable func undelivered() async -> Int64? {
      guard let text = try? await test.cli(["status", "--json"], bus: bus, dir: dir).stdout,
        let status = try? JSONValue.parse(Data(text.utf8))
      else { return nil }
      return status["outbox"]?["undelivered"]?.intValue
    }
    func start() async throws -> Process {
      let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus)
      try await waitUntil("the daemon answers status", timeout: .seconds(30)) { await undelivered() != nil }
      return daemon
    }
    func stop(_ daemon: Process) async {
      kill(daemon.processIdentifier, SIGTERM)
      #expect(await waitForExit(daemon))
    }

    // The baseline: a daemon whose outbox is empty, once it has drained one such batch, so that
    // the code of the drain is in both measures and the difference is what the backlog costs.
    var daemon = try await start()
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    await stop(daemon)
    try await seed(store: dir + "/beaconbridge.sqlite", trip: "warm-up", batches: 1)
    daemon = try await start()
    try configure("realtime")
    kill(daemon.processIdentifier, SIGHUP)
    try await waitUntil("the one batch has drained", timeout: .seconds(30)) { await undelivered() == 0 }
    let none = try residentKB(daemon)
    print(
      "backlog: with none, anonymous \(try residentKB(daemon, "RssAnon")) KB, file \(try residentKB(daemon, "RssFile")) KB"
    )
    await stop(daemon)
    try configure("postTrip")

    try await seed(store: dir + "/beaconbridge.sqlite", trip: "old-trip", batches: Self.batches)
    daemon = try await start()
    try await waitUntil("the backlog is counted", timeout: .seconds(30)) {
      await undelivered() == Int64(Self.batches)
    }
    let waiting = try residentKB(daemon)
    await stop(daemon)

    daemon = try await start()
    try await waitUntil("the backlog is counted", timeout: .seconds(30)) {
      await undelivered() == Int64(Self.batches)
    }
    let restarted = try residentKB(daemon)

    try configure("realtime")
    let drainStart = ContinuousClock.now
    kill(daemon.processIdentifier, SIGHUP)
    try await waitUntil("the backlog has drained", timeout: .seconds(400), poll: .seconds(1)) {
      await undelivered() == 0
    }
    let drained = try residentKB(daemon)
    print(
      "backlog: after draining, anonymous \(try residentKB(daemon, "RssAnon")) KB, file \(try residentKB(daemon, "RssFile")) KB"
    )
    let seconds = (ContinuousClock.now - drainStart).seconds
    print(
      "backlog: RSS \(none) KB with none, \(waiting) KB with \(Self.batches) batches waiting, \(restarted) KB "
        + "after a restart, \(drained) KB after draining them (\(String(format: "%.1f", seconds)) s, "
        + "\(Int(Double(Self.batches) / seconds)) batches/s)")
    for (moment, kb) in [("waiting", waiting), ("after a restart", restarted), ("after draining", drained)] {
      #expect(kb - none <= 2048, "RSS \(moment): \(kb) KB, \(kb - none) KB over \(none) KB with no backlog")
    }
    await stop(daemon)
  }

  /// Writes `batches` undelivered batches of an open trip, waiting for its end, as one transaction,
  /// numbered -1, -2, … (see above).
  func seed(store: String, trip: String, batches: Int) async throws {
    let script = """
      import sqlite3, sys, time
      db = sqlite3.connect(sys.argv[1], isolation_level=None)
      trip, n = sys.argv[2], int(sys.argv[3])
      now = time.time()
      db.execute("BEGIN")
      db.execute("INSERT INTO trips (trip_id, started_at, resolution, beacon_mode, next_sequence) "
                 "VALUES (?, ?, '{\\"reason\\":\\"configured\\",\\"deviceId\\":\\"VAN-1\\"}', 0, ?)",
                 (trip, now, n))
      db.executemany("INSERT INTO queue (trip_id, sequence, events, received_at, state) VALUES (?, ?, ?, ?, 1)",
                     ((trip, -1 - i, '[{"type":"braking","n":%d,"pad":"%s"}]' % (i, "x" * 40), now) for i in range(n)))
      db.execute("COMMIT")
      """
    let run = try await runProcess("/usr/bin/python3", ["-c", script, store, trip, String(batches)])
    #expect(run.status == 0, "\(run.stderr)")
  }
}

/// A process's resident set (`VmRSS`, or another field of /proc/PID/status), in KB.
func residentKB(_ process: Process, _ field: String = "VmRSS") throws -> Int {
  let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
  guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
    let kb = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
  else { throw CocoaError(.fileReadCorruptFile) }
  return kb
}
