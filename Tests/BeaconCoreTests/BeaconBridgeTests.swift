import BeaconTestSupport
import Testing

@testable import BeaconCore

/// The façade: arming, the ScopeHost seam, upload retries, and running against a source.
@Suite struct BeaconBridgeTests {
  @Test func tripCallsBeforeArmingAreRefused() async throws {
    let bridge = BeaconBridge(host: RecordingHost(), clock: TestClock())
    await #expect(throws: BridgeError.self) { try await bridge.tripStart("t1") }
    do {
      try await bridge.tripStart("t1")
    } catch {
      #expect(error.code == .notArmed)
      #expect(error.description.contains("not armed"))
    }
    try await bridge.start()
    try await bridge.tripStart("t1")
  }

  @Test func invalidConfigurationRefusesToArmAndNamesEveryProblem() async throws {
    var configuration = BridgeConfiguration()
    configuration.trips.unresolvedPolicy = .fallback
    configuration.presence.exitTimeout = 0
    let bridge = BeaconBridge(host: RecordingHost(configuration: configuration), clock: TestClock())
    do {
      try await bridge.start()
      Issue.record("start() accepted an invalid configuration")
    } catch {
      #expect(error.code == .invalidConfiguration)
      #expect(error.description.contains("fallbackDeviceId"))
      #expect(error.description.contains("exitTimeout"))
    }
    #expect(await bridge.isArmed == false)
  }

  @Test func smartModeHostUsesItsConfiguredDeviceId() async throws {
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "SERIAL-123"
    let host = RecordingHost(configuration: configuration, beaconMode: false)
    let bridge = BeaconBridge(host: host, clock: TestClock())
    try await bridge.start()
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
    #expect(host.posted.map(\.deviceId) == ["SERIAL-123"])
    #expect(host.posted.first?.resolution == .configured(deviceId: "SERIAL-123"))
    #expect(host.snapshots.isEmpty)
  }

  @Test func beaconHookSnapshotsTheActiveBeacon() async throws {
    let clock = TestClock()
    let host = RecordingHost()
    let bridge = BeaconBridge(host: host, clock: clock)
    await bridge.setPairings([Fixtures.vanPairing])
    try await bridge.start()
    for t in 0...3 {
      clock.set(seconds: Double(t))
      await bridge.ingest(
        .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)))
    }
    try await bridge.tripStart("t1")
    let snapshot = try #require(host.snapshots.first ?? nil)
    #expect(snapshot.deviceId == "UNIT-0042")
    #expect(snapshot.label == "van 7")
    #expect(snapshot.lastRSSI == -60)
  }

  @Test func failedPostsAreRetriedInOrderAndNothingIsLost() async throws {
    let clock = TestClock()
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "SERIAL-1"
    configuration.postRetryJitter = 0
    let host = RecordingHost(configuration: configuration, beaconMode: false)
    let log = EventLog()
    let bridge = BeaconBridge(host: host, clock: clock, observer: log.observer)
    try await bridge.start()
    try await bridge.tripStart("t1")
    host.failPosts(3)
    for i in 0..<4 { try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: Double(i))]) }
    #expect(host.posted.isEmpty)
    #expect(await bridge.status.outboundBatches == 4)
    // Backoff: 1 s, 2 s, 4 s.
    var delays: [Double] = []
    var failures: [Int] = []
    // Bounded: a bridge that kept retrying without delivering fails here rather than hanging.
    while host.posted.count < 4, delays.count < 10 {
      let due = try #require(await bridge.nextDeadline)
      delays.append(due.seconds)
      let upload = await bridge.status.upload
      failures.append(upload.consecutiveFailures)
      #expect(upload.retryAt == due)
      #expect(upload.lastError != nil)
      #expect(upload.delivered == 0)
      clock.set(seconds: due.seconds)
      await bridge.tick()
    }
    #expect(delays == [1, 3, 7])
    // `status`'s upload state counts the failures in a row, and clears them on a delivery.
    #expect(failures == [1, 2, 3])
    let upload = await bridge.status.upload
    #expect(upload.consecutiveFailures == 0)
    #expect(upload.lastError == nil)
    #expect(upload.retryAt == nil)
    #expect(upload.delivered == 4)
    #expect(upload.lastDeliveredAt == Timestamp(seconds: 7))
    #expect(upload.lastFailedAt == Timestamp(seconds: 3))
    #expect(host.posted.map(\.sequence) == [0, 1, 2, 3])
    #expect(log.count("batchPostFailed") == 3)
    #expect(await bridge.status.outboundBatches == 0)
  }

  @Test func runConsumesASourceAndTicksDeadlinesOnTheClock() async throws {
    let clock = TestClock()
    let adapter = MockAdapter()
    let log = EventLog()
    let bridge = BeaconBridge(host: RecordingHost(), clock: clock, observer: log.observer)
    await bridge.setPairings([Fixtures.vanPairing])
    try await bridge.start()
    let running = Task { try await bridge.run(source: adapter) }
    // Sightings are dropped until `run` has started the source.
    try await waitUntil("the source started") { adapter.startCount == 1 }
    for t in 0...2 {
      #expect(
        adapter.emit(.sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)))
      )
      // Each sighting is ingested at its own virtual second before the clock moves on.
      try await waitUntil("sighting \(t + 1) ingested") {
        await bridge.status.beaconsInRange.first?.sightings == t + 1
      }
      // A beacon in range has a deadline: the loop sleeps on the clock, a second at most.
      await clock.waitForSleepers(count: 1)
      clock.advance(by: .seconds(1))
    }
    // Silence: presence exits by its own deadline, then the active hold runs out.
    // Once the hold has run out nothing has a deadline and the loop parks: step the clock only
    // while it sleeps on it.
    for _ in 0..<120 {
      try await waitUntil("the loop on the clock, or the hold over") {
        clock.sleeperCount >= 1 || log.count("activeBeaconChanged") >= 2
      }
      if log.count("activeBeaconChanged") >= 2 { break }
      clock.advance(by: .seconds(1))
    }
    #expect(
      log.types().filter { $0 != "rejected" } == [
        "beaconEntered", "activeBeaconChanged", "beaconExited", "activeBeaconChanged",
      ])
    adapter.finish()
    try await running.value
    #expect(adapter.startCount == 1)
  }

  /// An idle bridge does not wake on a period: with nothing to time, the deadline loop
  /// parks instead of sleeping on the clock, and a sighting or a trip call wakes it.
  @Test func theDeadlineLoopParksWhileNothingHasADeadline() async throws {
    let clock = TestClock()
    let host = RecordingHost()
    let bridge = BeaconBridge(host: host, clock: clock)
    // No pairing: a paired beacon that left keeps a deadline (its silence, for health).
    try await bridge.start()
    #expect(await bridge.nextDeadline == nil)
    let loop = Task { try await bridge.runDeadlines() }
    // Parked: the loop holds a continuation and nothing on the clock. A loop that slept on a
    // period would never park, and this wait would fail.
    try await waitUntil("the deadline loop parks") { await bridge.parked != nil }
    #expect(clock.sleeperCount == 0)

    await bridge.ingest(
      .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)))
    #expect(await bridge.nextDeadline != nil)
    await clock.waitForSleepers(count: 1)

    // Time the beacon out; with nothing left, the loop parks again.
    for _ in 0..<120 {
      try await waitUntil("the loop on the clock, or nothing left to time") {
        let next = await bridge.nextDeadline
        return clock.sleeperCount >= 1 || next == nil
      }
      if await bridge.nextDeadline == nil { break }
      clock.advance(by: .seconds(1))
    }
    #expect(await bridge.status.beaconsInRange.isEmpty)
    // Parked again, its last timer gone from the clock.
    try await waitUntil("the loop parks with nothing on the clock") {
      await bridge.parked != nil && clock.sleeperCount == 0
    }

    // A trip call wakes it too: a batch the host refused waits for its retry, a deadline.
    host.failPosts(1)
    try await bridge.tripStart("idle-1")
    try await bridge.tripEvents("idle-1", events: [Fixtures.event("braking", at: 1)])
    #expect(await bridge.nextDeadline != nil)
    await clock.waitForSleepers(count: 1)
    loop.cancel()
    await #expect(throws: CancellationError.self) { try await loop.value }
  }

  @Test func reloadRefusesABadConfigurationAndKeepsTheOld() async throws {
    let host = RecordingHost()
    let bridge = BeaconBridge(host: host, clock: TestClock())
    var old = BridgeConfiguration()
    old.trips.lateWindow = 10
    host.setConfiguration(old)
    try await bridge.start()
    var bad = BridgeConfiguration()
    bad.selector.dwellSightings = 0
    bad.trips.lateWindow = 40
    host.setConfiguration(bad)
    await #expect(throws: BridgeError.self) { try await bridge.reload() }
    // The old late window (10 s) still rules a trip started now, not the refused one's 40 s.
    try await bridge.tripStart("t1")
    #expect(await bridge.nextDeadline == Timestamp(seconds: 10))
    var good = BridgeConfiguration()
    good.trips.lateWindow = 5
    host.setConfiguration(good)
    try await bridge.reload()
    try await bridge.tripStart("t2")
    #expect(await bridge.nextDeadline == Timestamp(seconds: 5))
  }

  @Test func configurationKeysRoundTripAndRejectBadValues() throws {
    var configuration = BridgeConfiguration()
    for key in BridgeConfiguration.keys {
      let value = try #require(configuration.value(of: key.name))
      try configuration.set(key.name, to: value)
    }
    #expect(configuration == BridgeConfiguration())
    #expect(throws: ConfigurationError.self) { try configuration.set("exitTimeout", to: "soon") }
    #expect(throws: ConfigurationError.self) { try configuration.set("noSuchKey", to: "1") }
    #expect(throws: ConfigurationError.self) { try configuration.set("unresolvedPolicy", to: "drop") }
    #expect(throws: ConfigurationError.self) { try configuration.set("dwellSightings", to: "1.5") }
    try configuration.set("exitTimeout", to: "25")
    #expect(configuration.presence.exitTimeout == 25)
  }

  /// A setting of named values refuses any other word with the list of the ones it takes.
  @Test(arguments: [
    ("unresolvedPolicy", "unresolvedPolicy must be hold or fallback, not \"drop\""),
    ("sending", "sending must be realtime or postTrip, not \"drop\""),
    ("rssiFilter", "rssiFilter must be kalman, runningAverage or arma, not \"drop\""),
  ])
  func aNamedValueSettingListsItsValues(key: String, message: String) {
    var configuration = BridgeConfiguration()
    #expect(throws: ConfigurationError(message)) { try configuration.set(key, to: "drop") }
  }
}
