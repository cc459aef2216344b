import BeaconCore
import BeaconTestSupport
import Synchronization
import Testing

/// Posting on its own task (`startPosting`): the trip calls answer while the host's post has not
/// returned, in realtime and postTrip mode, and `settled` waits until nothing is due.
@Suite(.timeLimit(.minutes(1)))
struct PostingTaskTests {
  /// A host whose posts wait until the test opens the gate: a backend that does not answer.
  final class GatedHost: ScopeHost {
    let configuration: BridgeConfiguration
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>], posted: [String])>(
      (false, [], []))

    init(sending: TripSending) {
      var configuration = BridgeConfiguration()
      configuration.trips.configuredDeviceId = "VAN-1"
      configuration.trips.sending = sending
      self.configuration = configuration
    }

    var posted: [String] { state.withLock { $0.posted } }
    var waiting: Int { state.withLock { $0.waiters.count } }

    func open() {
      let waiters = state.withLock { s in
        s.open = true
        defer { s.waiters = [] }
        return s.waiters
      }
      for waiter in waiters { waiter.resume() }
    }

    func log(_ record: LogRecord) {}

    func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
      await withCheckedContinuation { continuation in
        let open = state.withLock { s in
          if !s.open { s.waiters.append(continuation) }
          return s.open
        }
        if open { continuation.resume() }
      }
      state.withLock { $0.posted.append(batch.idempotencyKey) }
    }
  }

  @Test(arguments: [TripSending.realtime, .postTrip])
  func tripCallsAnswerWhileThePostHangs(sending: TripSending) async throws {
    let host = GatedHost(sending: sending)
    let bridge = BeaconBridge(host: host, clock: TestClock())
    let posting = await bridge.startPosting()
    defer { posting.cancel() }
    try await bridge.start()
    let trip: TripID = "t1"
    try await bridge.tripStart(trip)
    let events = try TripEvent.batch(fromJSON: Array(#"[{"type":"braking"}]"#.utf8))
    for _ in 0..<3 { try await bridge.tripEvents(trip, events: events) }
    if sending == .realtime {
      // The first post is in flight and does not return: the calls above answered all the same.
      try await waitUntil("the first post is in flight") { host.waiting == 1 }
      #expect(await bridge.status.outboundBatches == 3)
    } else {
      #expect(host.waiting == 0)
      #expect(await bridge.status.trips.first?.waitingForEnd == 3)
    }
    try await bridge.tripEnd(trip)
    try await waitUntil("the first post is in flight") { host.waiting == 1 }
    #expect(host.posted.isEmpty)
    host.open()
    await bridge.settled()
    #expect(host.posted == ["t1#0", "t1#1", "t1#2"])
    #expect(await bridge.status.outboundBatches == 0)
  }

  @Test func settledReturnsDuringABackoff() async throws {
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "VAN-1"
    configuration.postRetryInitial = 60
    configuration.postRetryMax = 60
    let host = RecordingHost(configuration: configuration, beaconMode: false)
    host.failPosts(1)
    let bridge = BeaconBridge(host: host, clock: TestClock())
    let posting = await bridge.startPosting()
    defer { posting.cancel() }
    try await bridge.start()
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: try TripEvent.batch(fromJSON: Array(#"[{"type":"a"}]"#.utf8)))
    await bridge.settled()
    // The post failed and waits out its backoff: nothing is due before then.
    #expect(host.postAttempts == 1)
    #expect(await bridge.status.outboundBatches == 1)
    #expect(await bridge.status.upload.consecutiveFailures == 1)
  }
}
