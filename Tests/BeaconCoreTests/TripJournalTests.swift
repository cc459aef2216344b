import BeaconCore
import BeaconTestSupport
import Testing

/// Durability through the journal: a bridge thrown away mid-trip (a crash) loses nothing.
@Suite struct TripJournalTests {
  func bridge(_ host: RecordingHost, _ journal: MemoryJournal, _ clock: TestClock = TestClock()) async throws
    -> BeaconBridge
  {
    let bridge = BeaconBridge(host: host, clock: clock, journal: journal)
    await bridge.setPairings([Fixtures.vanPairing])
    try await bridge.start()
    return bridge
  }

  func sight(_ bridge: BeaconBridge, _ clock: TestClock, from: Int, to: Int) async {
    for t in from...to {
      clock.set(seconds: Double(t))
      await bridge.ingest(
        .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)))
    }
  }

  @Test func heldBatchesSurviveACrashAndAreTaggedAfterIt() async throws {
    let journal = MemoryJournal()
    do {
      let first = try await bridge(RecordingHost(), journal)
      try await first.tripStart("t1")
      try await first.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
      try await first.tripEvents("t1", events: [Fixtures.event("cornering", at: 2)])
    }
    #expect(journal.undelivered == 2)
    // A new process: the trip is back, still waiting for its beacon.
    let host = RecordingHost()
    let clock = TestClock()
    let second = try await bridge(host, journal, clock)
    #expect(await second.status.trips.map(\.heldBatches) == [2])
    try await second.tripEvents("t1", events: [Fixtures.event("speeding", at: 3)])
    await sight(second, clock, from: 0, to: 2)
    #expect(host.posted.map(\.sequence) == [0, 1, 2])
    #expect(host.posted.allSatisfy { $0.deviceId == "UNIT-0042" })
    #expect(journal.undelivered == 0)
  }

  @Test func resolvedButUndeliveredBatchesAreResentInOrderAndDeliveredOnesAreNot() async throws {
    let journal = MemoryJournal()
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "SERIAL-9"
    do {
      let host = RecordingHost(configuration: configuration, beaconMode: false)
      let first = try await bridge(host, journal)
      try await first.tripStart("t1")
      try await first.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
      host.failPosts(100)
      try await first.tripEvents("t1", events: [Fixtures.event("cornering", at: 2)])
      try await first.tripEvents("t1", events: [Fixtures.event("speeding", at: 3)])
      try await first.tripEnd("t1")
      #expect(host.posted.map(\.sequence) == [0])
    }
    let host = RecordingHost(configuration: configuration, beaconMode: false)
    _ = try await bridge(host, journal)
    #expect(host.posted.map(\.sequence) == [1, 2])
    #expect(host.posted.allSatisfy { $0.deviceId == "SERIAL-9" && $0.resolution.reason == "configured" })
    // Ended and delivered: the journal lets the trip go.
    #expect(journal.tripIds.isEmpty)
  }

  @Test func aFullJournalRefusesTheBatchAndKeepsTheRest() async throws {
    let journal = MemoryJournal(limit: 2)
    let host = RecordingHost()
    let bridge = try await bridge(host, journal)
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 2)])
    do {
      try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 3)])
      Issue.record("a full journal took a batch")
    } catch {
      #expect(error.code == .refused)
      #expect(error.description.contains("full"))
    }
    #expect(await bridge.status.trips.first?.heldBatches == 2)
    #expect(journal.undelivered == 2)
    // The refused batch did not use up a sequence number.
    let journal2 = journal
    _ = journal2
  }

  @Test func permanentRefusalIsADeadLetterAndTheNextBatchGoesOn() async throws {
    final class PickyHost: ScopeHost {
      let configuration: BridgeConfiguration = {
        var c = BridgeConfiguration()
        c.trips.configuredDeviceId = "SERIAL-1"
        return c
      }()
      let recorded = RecordingHost()
      func log(_ record: LogRecord) {}
      func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
        if batch.events.contains(where: { $0.type == "poison" }) {
          throw PermanentPostFailure("HTTP 422: bad event")
        }
        try await recorded.postTripEventBatch(batch)
      }
    }
    let journal = MemoryJournal()
    let host = PickyHost()
    let log = EventLog()
    let bridge = BeaconBridge(host: host, clock: TestClock(), journal: journal, observer: log.observer)
    try await bridge.start()
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: [Fixtures.event("poison", at: 1)])
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 2)])
    #expect(host.recorded.posted.map(\.sequence) == [1])
    #expect(journal.deadLetters.map(\.1) == [0])
    #expect(journal.deadLetters.first?.2 == "HTTP 422: bad event")
    #expect(log.count("batchDeadLettered") == 1)
  }

  /// `trip retry`'s path: a dead letter posted again goes through the bridge's host and counts in
  /// the same upload state as the queue's posts (a failure is a failure in `status`, a delivery
  /// a delivery), never past it.
  @Test func aRetriedDeadLetterCountsInTheUploadState() async throws {
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "SERIAL-1"
    let host = RecordingHost(configuration: configuration)
    let log = EventLog()
    let bridge = BeaconBridge(
      host: host, clock: TestClock(), journal: MemoryJournal(), observer: log.observer)
    try await bridge.start()
    let letter = TaggedTripBatch(
      batch: TripEventBatch(
        tripId: "t9", sequence: 0, events: [Fixtures.event("braking", at: 1)], receivedAt: .zero),
      deviceId: "SERIAL-1", resolution: .configured(deviceId: "SERIAL-1"))
    host.failPosts(1)
    await #expect(throws: RecordingHost.PostFailure.self) { try await bridge.retryDeadLetter(letter) }
    var upload = await bridge.status.upload
    #expect(upload.consecutiveFailures == 1 && upload.lastError == "backend unavailable (injected)")
    #expect(upload.delivered == 0 && host.posted.isEmpty)
    try await bridge.retryDeadLetter(letter)
    upload = await bridge.status.upload
    #expect(upload.delivered == 1 && upload.consecutiveFailures == 0 && upload.lastError == nil)
    #expect(host.posted.map(\.idempotencyKey) == ["t9#0"])
    #expect(log.count("batchPosted") == 1)
  }

  @Test func resolutionSurvivesAsJSON() throws {
    let snapshot = BeaconSnapshot(
      id: .iBeacon(Fixtures.vanBeacon), deviceId: "UNIT-0042", label: "van 7", smoothedRSSI: -61.5,
      lastRSSI: -60,
      distance: 1.2, proximity: .near, takenAt: Timestamp(seconds: 12))
    var eid = snapshot
    eid.id = .keyed(KeyedIdentity(scheme: .eid, pairing: 3))
    var rpa = snapshot
    rpa.id = .keyed(KeyedIdentity(scheme: .rpa, pairing: 4))
    let cases: [TripResolution] = [
      .beacon(snapshot, late: false), .beacon(snapshot, late: true), .beacon(eid, late: false),
      .beacon(rpa, late: true), .fallback(deviceId: "D"),
      .configured(deviceId: "C"), .assigned(deviceId: "A"), .unresolved,
    ]
    for resolution in cases {
      let back = try TripResolution(journalJSON: resolution.journalJSON, now: .zero, lateWindow: 60)
      #expect(back == resolution)
    }
    #expect(
      try TripResolution(journalJSON: .object(["reason": .string("fallback")]), now: .zero, lateWindow: 60)
        == nil)
    // A device ID another version stored that breaks the rule is refused with its sentence, never
    // read as another resolution.
    let bad = JSONValue.object(["reason": .string("assigned"), "deviceId": .string("UNIT\u{1}7")])
    #expect(throws: IdentifierError.self) { try TripResolution(journalJSON: bad, now: .zero, lateWindow: 60) }
  }
}
