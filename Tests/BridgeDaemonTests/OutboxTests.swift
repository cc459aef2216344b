import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

/// The SQLite outbox as the bridge's journal: a real file, reopened as a restarted daemon would.
@Suite struct OutboxTests {
  func directory() -> String { scratchPath("outbox") }

  func bridge(_ host: RecordingHost, _ store: Store, _ clock: TestClock = TestClock()) async throws
    -> BeaconBridge
  {
    let bridge = BeaconBridge(host: host, clock: clock, journal: store)
    await bridge.setPairings([Fixtures.vanPairing])
    try await bridge.start()
    return bridge
  }

  /// Batches a previous run left queued stay in the store (only their count is read) and go out
  /// on the posting task after the restart, in order, with no new batch to wake it.
  @Test func queuedBatchesGoOutOnThePostingTaskAfterARestart() async throws {
    let dir = directory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "VAN-1"
    configuration.postRetryInitial = 60
    do {
      let host = RecordingHost(configuration: configuration, beaconMode: false)
      host.failPosts(1)
      let bridge = BeaconBridge(host: host, clock: TestClock(), journal: try Store(directory: dir))
      let posting = await bridge.startPosting()
      try await bridge.start()
      try await bridge.tripStart("t1")
      for n in 0..<3 { try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: Double(n))]) }
      await bridge.settled()
      #expect(host.posted.isEmpty)
      #expect(await bridge.status.outboundBatches == 3)
      // The first run ends before the second starts, as a process does.
      posting.cancel()
      await posting.value
    }
    let host = RecordingHost(configuration: configuration, beaconMode: false)
    let bridge = BeaconBridge(host: host, clock: TestClock(), journal: try Store(directory: dir))
    let posting = await bridge.startPosting()
    defer { posting.cancel() }
    try await bridge.start()
    try await waitUntil("the restored batches are posted") { host.posted.count == 3 }
    await bridge.settled()
    #expect(host.posted.map(\.idempotencyKey) == ["t1#0", "t1#1", "t1#2"])
    #expect(await bridge.status.outboundBatches == 0)
  }

  @Test func heldBatchesSurviveAReopenAndKeepEveryField() async throws {
    let dir = directory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    do {
      let bridge = try await bridge(RecordingHost(), try Store(directory: dir))
      try await bridge.tripStart("t1")
      try await bridge.tripEvents(
        "t1",
        events: [
          Fixtures.event("braking", at: 1, extra: ["g": .double(0.41), "tags": .array([.string("x")])])
        ])
      try await bridge.tripEvents("t1", events: [Fixtures.event("mysteryType", at: 2)])
    }
    let store = try Store(directory: dir)
    let summary = try await store.outboxSummary()
    #expect(summary.undelivered == 2)
    #expect(summary.trips == 1)
    let host = RecordingHost()
    let clock = TestClock()
    let bridge = try await bridge(host, store, clock)
    for t in 0...2 {
      clock.set(seconds: Double(t))
      await bridge.ingest(
        .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)))
    }
    #expect(host.posted.map(\.sequence) == [0, 1])
    #expect(host.posted.first?.events.first?.fields["g"] == .double(0.41))
    #expect(host.posted.first?.events.first?.fields["tags"] == .array([.string("x")]))
    #expect(host.posted.last?.events.first?.type == "mysteryType")
    #expect(try await store.outboxSummary().undelivered == 0)
  }

  @Test func unresolvedTripIsVisibleAndAssignableAfterARestart() async throws {
    let dir = directory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    do {
      let clock = TestClock()
      let bridge = try await bridge(RecordingHost(), try Store(directory: dir), clock)
      try await bridge.tripStart("t1")
      try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
      clock.set(seconds: 5)
      try await bridge.tripEnd("t1")
    }
    let store = try Store(directory: dir)
    #expect(try await store.outboxSummary().unresolvedTrips == 1)
    let host = RecordingHost()
    let bridge = try await bridge(host, store)
    #expect(await bridge.status.trips.first?.resolution == .unresolved)
    try await bridge.assign("t1", deviceId: "UNIT-7")
    #expect(host.posted.map(\.deviceId) == ["UNIT-7"])
    let after = try await store.outboxSummary()
    #expect(after.trips == 0)
    #expect(after.undelivered == 0)
  }

  @Test func fullOutboxRefusesNewBatchesAndDropsNothing() async throws {
    let dir = directory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    await store.setOutboxLimit(3)
    let bridge = try await bridge(RecordingHost(), store)
    try await bridge.tripStart("t1")
    for i in 0..<3 { try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: Double(i))]) }
    await #expect(throws: BridgeError.self) {
      try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 9)])
    }
    #expect(try await store.outboxSummary().undelivered == 3)
    // The refused batch used no sequence number: the next accepted one follows on.
    await store.setOutboxLimit(10)
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 10)])
    let kept = try await store.load()
    #expect(kept.first?.batches.map(\.sequence) == [0, 1, 2, 3])
  }

  @Test func deadLettersAreKept() async throws {
    let dir = directory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    try await store.recordTripStarted("t1")
    try await store.recordResolution("t1", .configured(deviceId: "SERIAL-1"), beaconMode: false)
    try await store.recordBatch(TripEventBatch(tripId: "t1", sequence: 0, events: [], receivedAt: .zero))
    try await store.recordDeadLetter("t1", sequence: 0, reason: "HTTP 400")
    let summary = try await store.outboxSummary()
    #expect(summary.deadLetters == 1)
    #expect(summary.undelivered == 0)
    // The bundle's outbox.json and TripRetry's answer list a dead letter the same way.
    let dead = try await store.deadLetters().map { ($0.key, $0.reason) }
    let letter = JSONValue.object(["key": .string("t1#0"), "reason": .string("HTTP 400")])
    let bundle = summary.json(deadLetters: dead)
    #expect(bundle["deadLetterReasons"] == .array([letter]))
    #expect(bundle["deadLetters"] == .int(1))
    struct Refused: Error, CustomStringConvertible { var description: String { "HTTP 400" } }
    let retried = try await store.retryDeadLetters(tripId: nil) { _ in throw Refused() }
    #expect(retried.json == .object(["delivered": .int(0), "failed": .array([letter])]))
  }
}
