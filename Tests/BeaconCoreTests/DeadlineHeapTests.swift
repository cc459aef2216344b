import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconCore

/// Presence's and trips' deadlines live in heaps: each answer must be the one a scan
/// of every beacon or trip gives, and the heap must stay bounded however the tables churn.
@Suite(.offThePool) struct DeadlineHeapTests {
  @Test func popsInDeadlineOrderThenPushOrder() {
    var heap = DeadlineHeap<Int>()
    var generator = SeededGenerator(seed: 7)
    var pushed: [(Double, UInt64)] = []
    for i in 0..<500 {
      let deadline = Double(Int.random(in: 0..<50, using: &generator))
      pushed.append((deadline, heap.push(deadline, i)))
    }
    var popped: [(Double, UInt64)] = []
    while let element = heap.pop() { popped.append((element.deadline, element.stamp)) }
    let expected = pushed.sorted { $0 < $1 }
    #expect(popped.map(\.0) == expected.map(\.0))
    #expect(popped.map(\.1) == expected.map(\.1))
  }

  @Test func rebuildKeepsTheOrder() {
    var heap = DeadlineHeap<Int>()
    for i in 0..<100 { heap.push(Double(100 - i), i) }
    let stamps = heap.rebuild((0..<10).map { (Double(10 - $0), $0) })
    #expect(stamps.count == 10)
    #expect(heap.count == 10)
    var order: [Int] = []
    while let element = heap.pop() { order.append(element.tag) }
    #expect(order == Array((0..<10).reversed()))
  }

  func identity(_ n: Int) -> BeaconIdentity {
    BeaconIdentity(uuid: Fixtures.fleet, major: UInt16(n / 65_536), minor: UInt16(n % 65_536))
  }

  func sighting(_ n: Int, address: Int, rssi: Int) -> (BeaconFrame, Advertisement) {
    let id = identity(n)
    let address = BluetoothAddress(bytes: [0xC0, 0, 0, 0, UInt8(address >> 8), UInt8(address & 0xFF)])!
    return (
      .iBeacon(IBeaconFrame(identity: id, measuredPower: -59)),
      Fixtures.iBeacon(id, address: address, rssi: rssi)
    )
  }

  /// The next deadline is the first time `expire` has something to do: nothing just before it,
  /// something a nanosecond after it. Two trackers fed the same sightings, one asked for its deadline after
  /// every sighting and one only when it expires, exit the same beacons at the same times.
  @Test(arguments: [1, 2, 3])
  func presenceDeadlineIsTheFirstTimeABeaconExits(seed: UInt64) {
    var generator = SeededGenerator(seed: seed)
    var asked = PresenceTracker()
    var lazy = PresenceTracker()
    var time = 0.0
    var exits = 0
    for step in 0..<4000 {
      time += Double(Int.random(in: 0..<400, using: &generator)) / 1000
      let beacon = Int.random(in: 0..<60, using: &generator)
      if Int.random(in: 0..<50, using: &generator) == 0 {
        let address = BluetoothAddress(bytes: [0xC0, 0, 0, 0, 0, UInt8(beacon % 20)])!
        #expect(
          asked.lost(address, at: Timestamp(seconds: time))
            == lazy.lost(address, at: Timestamp(seconds: time)))
        continue
      }
      let (frame, ad) = sighting(beacon, address: beacon % 20, rssi: -60 - beacon % 30)
      let now = Timestamp(seconds: time)
      #expect(asked.observe(frame, from: ad, at: now) == lazy.observe(frame, from: ad, at: now))
      guard let due = asked.nextDeadline else {
        Issue.record("no deadline with a beacon in range")
        return
      }
      var before = asked
      #expect(before.expire(at: Timestamp(seconds: due.seconds.nextDown)).isEmpty, "step \(step)")
      // A deadline is a rounded sum, the exit test a rounded difference: the bridge and
      // `simulate` tick a nanosecond past a deadline for that reason.
      var at = asked
      #expect(!at.expire(at: Timestamp(seconds: due.seconds + 1e-9)).isEmpty, "step \(step)")
      if step % 7 == 0 {
        let later = Timestamp(seconds: time + Double(Int.random(in: 0..<30_000, using: &generator)) / 1000)
        let gone = asked.expire(at: later)
        #expect(gone == lazy.expire(at: later), "step \(step)")
        exits += gone.count
        time = later.seconds
      }
      #expect(asked.deadlineHeapCount <= 2 * asked.inRange.count + 33)
    }
    #expect(exits > 100, "the walk should make beacons exit")
    #expect(asked.inRange == lazy.inRange)
  }

  /// A beacon sighted every tenth of a second for a long time, with its deadline asked for after
  /// each sighting, keeps one element in force and the heap small.
  @Test func heapStaysBoundedUnderConstantSightings() {
    var tracker = PresenceTracker()
    let (frame, ad) = sighting(1, address: 1, rssi: -60)
    for i in 0..<20_000 {
      _ = tracker.observe(frame, from: ad, at: Timestamp(seconds: Double(i) / 10))
      _ = tracker.nextDeadline
      #expect(tracker.deadlineHeapCount <= 35)
    }
    #expect(tracker.nextDeadline == Timestamp(seconds: 1999.9 + 10))
  }

  /// A trip's late window is the earliest pending one; trips resolved or ended no longer count;
  /// `expire` resolves the due ones oldest first; the heap stays bounded.
  @Test func tripDeadlinesFollowThePendingTrips() throws {
    var settings = TripSettings()
    settings.lateWindow = 60
    var resolver = BeaconTripResolver(settings: settings)
    #expect(resolver.nextDeadline == nil)
    for i in 0..<10 { try resolver.start(TripID("t\(i)"), at: Timestamp(seconds: Double(10 - i))) }
    #expect(resolver.nextDeadline == Timestamp(seconds: 61))
    _ = try resolver.end("t9", at: Timestamp(seconds: 5))
    #expect(resolver.nextDeadline == Timestamp(seconds: 62))
    _ = try resolver.assign("t8", deviceId: "UNIT-1")
    #expect(resolver.nextDeadline == Timestamp(seconds: 63))
    let due = resolver.expire(at: Timestamp(seconds: 65))
    #expect(due.map(\.0) == ["t7", "t6", "t5"])
    #expect(resolver.nextDeadline == Timestamp(seconds: 66))
    #expect(resolver.expire(at: Timestamp(seconds: 65.5)).isEmpty)
    // Churn: trips started and ended one after another leave a bounded heap.
    resolver.settings.unresolvedPolicy = .fallback
    resolver.settings.fallbackDeviceId = "UNIT-FALLBACK"
    for i in 0..<5000 {
      let trip = try TripID("c\(i)")
      try resolver.start(trip, at: Timestamp(seconds: 100 + Double(i)))
      _ = try resolver.end(trip, at: Timestamp(seconds: 100 + Double(i)))
      resolver.retire(trip)
      #expect(resolver.trip(trip) == nil)
      #expect(resolver.deadlineHeapCount <= 2 * 7 + 33)
    }
    #expect(resolver.nextDeadline == Timestamp(seconds: 66))
  }
}
