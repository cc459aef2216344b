import BeaconCore
import BeaconTestSupport
import Testing

/// `[Trips] sending`: realtime posts each batch as it is tagged; postTrip keeps a trip's batches
/// until the trip ends, then posts them in order.
@Suite struct PostTripSendingTests {
  func host(_ sending: TripSending) -> RecordingHost {
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "SERIAL-1"
    configuration.trips.sending = sending
    configuration.postRetryInitial = 0.001
    configuration.postRetryMax = 0.001
    return RecordingHost(configuration: configuration, beaconMode: false)
  }

  @Test func postTripPostsOnlyAfterTheTripEnds() async throws {
    let host = host(.postTrip)
    let bridge = BeaconBridge(host: host, clock: TestClock())
    try await bridge.start()
    try await bridge.tripStart("t1")
    for i in 0..<3 { try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: Double(i))]) }
    await bridge.tick()
    #expect(host.posted.isEmpty)
    let waiting = await bridge.status
    #expect(waiting.outboundBatches == 3)
    #expect(waiting.trips.map(\.waitingForEnd) == [3])
    try await bridge.tripEnd("t1")
    #expect(host.posted.map(\.sequence) == [0, 1, 2])
    #expect(host.posted.allSatisfy { $0.deviceId == "SERIAL-1" })
    #expect(await bridge.status.outboundBatches == 0)
  }

  @Test func realtimePostsEachBatchAtOnce() async throws {
    let host = host(.realtime)
    let bridge = BeaconBridge(host: host, clock: TestClock())
    try await bridge.start()
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
    #expect(host.posted.map(\.sequence) == [0])
    #expect(await bridge.status.trips.map(\.waitingForEnd) == [0])
  }

  /// Two trips: the ended one's batches go while the running one's wait, each trip in order.
  @Test func anEndedTripIsNotHeldBehindARunningOne() async throws {
    let host = host(.postTrip)
    let bridge = BeaconBridge(host: host, clock: TestClock())
    try await bridge.start()
    try await bridge.tripStart("running")
    try await bridge.tripEvents("running", events: [Fixtures.event("braking", at: 1)])
    try await bridge.tripStart("short")
    try await bridge.tripEvents("short", events: [Fixtures.event("braking", at: 2)])
    try await bridge.tripEvents("short", events: [Fixtures.event("braking", at: 3)])
    try await bridge.tripEnd("short")
    #expect(host.posted.map(\.idempotencyKey) == ["short#0", "short#1"])
    try await bridge.tripEnd("running")
    #expect(host.posted.map(\.idempotencyKey) == ["short#0", "short#1", "running#0"])
  }

  /// A failure after the trip's end is retried with backoff like any other, in order.
  @Test func aFailedPostAfterTheEndIsRetried() async throws {
    let clock = TestClock()
    let host = host(.postTrip)
    host.failPosts(2)
    let bridge = BeaconBridge(host: host, clock: clock)
    try await bridge.start()
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 2)])
    try await bridge.tripEnd("t1")
    #expect(host.posted.isEmpty)
    for step in 1...20 where host.posted.count < 2 {
      clock.set(seconds: Double(step))
      await bridge.tick()
    }
    #expect(host.posted.map(\.sequence) == [0, 1])
    #expect(host.postAttempts == 4)
  }

  @Test func theSettingParses() throws {
    var configuration = BridgeConfiguration()
    #expect(configuration.value(of: "sending") == "realtime")
    try configuration.set("sending", to: "postTrip")
    #expect(configuration.trips.sending == .postTrip)
    #expect(BridgeConfiguration.section(of: "sending") == "Trips")
    #expect(throws: ConfigurationError.self) { try configuration.set("sending", to: "later") }
  }
}
