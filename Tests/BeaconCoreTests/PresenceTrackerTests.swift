import BeaconCore
import BeaconTestSupport
import Testing

@Suite struct PresenceTrackerTests {
  let frame = BeaconFrame.iBeacon(IBeaconFrame(identity: Fixtures.vanBeacon, measuredPower: -59))

  func ad(rssi: Int?) -> Advertisement {
    Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: rssi)
  }

  @Test func entersOnFirstSightingAndExitsAfterTimeout() {
    var tracker = PresenceTracker()
    let entered = tracker.observe(frame, from: ad(rssi: -60), at: Timestamp(seconds: 1))
    #expect(entered.count == 1)
    #expect(tracker.observe(frame, from: ad(rssi: -61), at: Timestamp(seconds: 2)).isEmpty)
    #expect(tracker.nextDeadline == Timestamp(seconds: 12))
    #expect(tracker.expire(at: Timestamp(seconds: 11.9)).isEmpty)
    let exits = tracker.expire(at: Timestamp(seconds: 12))
    guard case .exited(let beacon, .timeout)? = exits.first else {
      Issue.record("expected a timeout exit, got \(exits)")
      return
    }
    #expect(beacon.sightings == 2)
    #expect(tracker.inRange.isEmpty)
  }

  @Test func exitTimeoutIsASetting() {
    var settings = PresenceSettings()
    settings.exitTimeout = 40
    var tracker = PresenceTracker(settings: settings)
    _ = tracker.observe(frame, from: ad(rssi: -60), at: .zero)
    #expect(tracker.expire(at: Timestamp(seconds: 39)).isEmpty)
    #expect(tracker.expire(at: Timestamp(seconds: 40)).count == 1)
  }

  @Test(arguments: [nil, 127, 0] as [Int?])
  func sightingWithoutUsableRSSICountsAsPresence(rssi: Int?) {
    var tracker = PresenceTracker()
    #expect(tracker.observe(frame, from: ad(rssi: rssi), at: .zero).count == 1)
    let beacon = tracker.beacon(.iBeacon(Fixtures.vanBeacon))
    #expect(beacon?.lastRSSI == nil)
    #expect(beacon?.smoothedRSSI == nil)
    #expect(beacon?.proximity == .unknown)
    // Unknown values never pull the smoothed RSSI.
    _ = tracker.observe(frame, from: ad(rssi: -70), at: Timestamp(seconds: 1))
    _ = tracker.observe(frame, from: ad(rssi: rssi), at: Timestamp(seconds: 2))
    #expect(tracker.beacon(.iBeacon(Fixtures.vanBeacon))?.smoothedRSSI == -70)
  }

  @Test func backendLossExitsAtOnce() {
    var tracker = PresenceTracker()
    _ = tracker.observe(frame, from: ad(rssi: -60), at: .zero)
    #expect(tracker.lost(Fixtures.otherVanAddress, at: Timestamp(seconds: 1)).isEmpty)
    let exits = tracker.lost(Fixtures.vanAddress, at: Timestamp(seconds: 1))
    #expect(exits.count == 1)
    if case .exited(_, let reason)? = exits.first { #expect(reason == .lost) }
  }

  static func lostIDs(_ events: [PresenceEvent]) -> [BeaconID] {
    var ids: [BeaconID] = []
    for case .exited(let beacon, .lost) in events { ids.append(beacon.id) }
    return ids
  }

  /// A beacon heard from a new address (address rotation) belongs to that address from then
  /// on: `lost` of the old one leaves it in range, `lost` of the new one exits it. Another beacon
  /// still heard from the old address stays linked to it.
  @Test func aBeaconThatChangesAddressIsLostWithTheNewOne() {
    var tracker = PresenceTracker()
    let other = BeaconFrame.iBeacon(IBeaconFrame(identity: Fixtures.otherVanBeacon, measuredPower: -59))
    let moved = Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.otherVanAddress, rssi: -62)
    _ = tracker.observe(frame, from: ad(rssi: -60), at: .zero)
    _ = tracker.observe(
      other, from: Fixtures.iBeacon(Fixtures.otherVanBeacon, address: Fixtures.vanAddress, rssi: -70),
      at: .zero)
    #expect(tracker.observe(frame, from: moved, at: Timestamp(seconds: 1)).isEmpty)
    #expect(tracker.beacon(.iBeacon(Fixtures.vanBeacon))?.address == Fixtures.otherVanAddress)
    #expect(tracker.beacon(.iBeacon(Fixtures.vanBeacon))?.sightings == 2)
    #expect(
      Self.lostIDs(tracker.lost(Fixtures.vanAddress, at: Timestamp(seconds: 2))) == [
        .iBeacon(Fixtures.otherVanBeacon)
      ])
    #expect(tracker.beacon(.iBeacon(Fixtures.vanBeacon)) != nil)
    #expect(
      Self.lostIDs(tracker.lost(Fixtures.otherVanAddress, at: Timestamp(seconds: 2))) == [
        .iBeacon(Fixtures.vanBeacon)
      ])
    #expect(tracker.inRange.isEmpty)
  }

  @Test func distanceAndProximityFollowTheSmoothedRSSI() {
    var tracker = PresenceTracker()
    _ = tracker.observe(frame, from: ad(rssi: -59), at: .zero)
    let near = tracker.beacon(.iBeacon(Fixtures.vanBeacon))!
    // At the calibrated power the curve fit gives A + C = 0.97085 m.
    #expect(abs(near.distance! - 0.97085) < 0.001)
    #expect(near.proximity == .near)
    var far = PresenceTracker()
    _ = far.observe(frame, from: ad(rssi: -85), at: .zero)
    #expect(far.beacon(.iBeacon(Fixtures.vanBeacon))!.proximity == .far)
  }

  /// docs/DESIGN.md, Behaviour: a beacon at 1 Hz that loses 40% of its packets must not flap.
  @Test(arguments: Array(1...20) as [UInt64])
  func lossyBeaconDoesNotFlap(seed: UInt64) {
    var tracker = PresenceTracker()
    var generator = SeededGenerator(seed: seed)
    var enters = 0
    var exits = 0
    for second in 0..<3600 {
      let time = Timestamp(seconds: Double(second))
      exits += tracker.expire(at: time).count
      if second == 0 || Double.random(in: 0..<1, using: &generator) >= 0.4 {
        enters +=
          tracker.observe(frame, from: ad(rssi: -65 + Int.random(in: -4...4, using: &generator)), at: time)
          .count
      }
    }
    #expect(enters == 1)
    #expect(exits == 0)
    // And it still leaves: silence after the last packet ends its presence within a minute.
    let last = tracker.beacon(.iBeacon(Fixtures.vanBeacon))!.lastSeen
    let next = tracker.nextDeadline
    let deadline = try! #require(next)
    #expect(deadline - last >= 10 && deadline - last <= 30, "exit after \(deadline - last) s")
  }

  @Test func reliableBeaconExitsAfterExactlyTheTimeout() {
    var tracker = PresenceTracker()
    for second in 0..<30 {
      _ = tracker.observe(frame, from: ad(rssi: -60), at: Timestamp(seconds: Double(second)))
    }
    #expect(tracker.nextDeadline == Timestamp(seconds: 39))
  }
}
