import BeaconCore
import BeaconTestSupport
import GZone
import Testing

@testable import BridgeDaemon

/// The queue of D-Bus signals to send: taken a burst at a time, the newest `limit` kept when the
/// sender falls behind, and a waiting sender returned when its task is cancelled. A wait that
/// never returned would hang: the time limit fails it.
@Suite(.timeLimit(.minutes(1))) struct AnnouncementsTests {
  static func started(_ n: Int) -> Announcements.Item {
    .bridge(.tripStarted(tripId: TripID(stringLiteral: "trip-\(n)")))
  }

  static func ids(_ items: ArraySlice<Announcements.Item>) -> [String] {
    items.map { item in
      guard case .bridge(.tripStarted(let id)) = item else { return "?" }
      return id.rawValue
    }
  }

  @Test func aBurstIsTakenWholeInOrder() async {
    let announcements = Announcements()
    for n in 0..<5 { announcements.yield(Self.started(n)) }
    #expect(Self.ids(await announcements.next()) == (0..<5).map { "trip-\($0)" })
    announcements.yield(Self.started(5))
    #expect(Self.ids(await announcements.next()) == ["trip-5"])
  }

  @Test func pastTheLimitTheOldestGo() async {
    let announcements = Announcements()
    let total = 3 * Announcements.limit + 7
    for n in 0..<total { announcements.yield(Self.started(n)) }
    let taken = Self.ids(await announcements.next())
    #expect(taken == ((total - Announcements.limit)..<total).map { "trip-\($0)" })
  }

  @Test func aWaitingSenderIsWokenByTheNextAnnouncement() async {
    let announcements = Announcements()
    let sender = Task { Self.ids(await announcements.next()) }
    await Task.yield()
    announcements.yield(Self.started(1))
    #expect(await sender.value == ["trip-1"])
  }

  /// A flood's beacons entering and leaving are no signals: the fan-out queues none of them, so
  /// the sender is not woken for each (the work items a wake-up allocates stayed scattered over
  /// the heap after a flood). The events that are signals are queued, in order.
  @Test func theFanOutQueuesOnlyTheEventsThatAreSignals() async throws {
    let directory = try scratchDirectory("announcements")
    let store = try Store(directory: directory)
    let announcements = Announcements()
    let fanOut = BridgeEventFanOut(
      logger: DaemonLogger(environment: [:]), statusChanged: Doorbell(), paired: PairedBeacons(),
      announcements: announcements,
      gzone: GZonePoller(
        store: store, settings: { (GZoneConfiguration(), nil) }, log: { _, _ in }, emit: { _ in }),
      fleetInbox: FleetInbox())
    let ad = Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)
    var tracker = PresenceTracker()
    let frame = try #require(try BeaconFrameParser.parseManufacturerData(ad.manufacturerData[0])?.get())
    guard case .entered(let beacon)? = tracker.observe(frame, from: ad, at: Timestamp(seconds: 5)).first
    else {
      Issue.record("the beacon did not enter")
      return
    }
    for _ in 0..<100 {
      fanOut.deliver(TimedBridgeEvent(at: Timestamp(seconds: 5), event: .beaconEntered(beacon)))
      fanOut.deliver(TimedBridgeEvent(at: Timestamp(seconds: 9), event: .beaconExited(beacon, .timeout)))
    }
    fanOut.deliver(TimedBridgeEvent(at: Timestamp(seconds: 9), event: .tripStarted(tripId: "trip-1")))
    fanOut.deliver(TimedBridgeEvent(at: Timestamp(seconds: 9), event: .activeBeaconChanged(nil)))
    let taken = await announcements.next()
    #expect(taken.count == 1)
    guard case .bridge(.activeBeaconChanged(nil)) = taken.first else {
      Issue.record("queued: \(Array(taken))")
      return
    }
  }

  @Test func cancellingTheSenderReturnsNothing() async {
    let announcements = Announcements()
    let sender = Task { await announcements.next() }
    sender.cancel()
    #expect(await sender.value.isEmpty)
  }
}
