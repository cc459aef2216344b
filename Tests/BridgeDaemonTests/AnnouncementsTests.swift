import BeaconCore
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

  @Test func cancellingTheSenderReturnsNothing() async {
    let announcements = Announcements()
    let sender = Task { await announcements.next() }
    sender.cancel()
    #expect(await sender.value.isEmpty)
  }
}
