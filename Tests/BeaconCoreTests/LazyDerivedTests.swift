import BeaconTestSupport
import Testing

@testable import BeaconCore

/// `PresenceTracker` derives a beacon's smoothed RSSI, distance and proximity when the beacon is
/// read rather than on every sighting; these hold what it reports to what deriving them at every
/// sighting gives, across filters, missing RSSI, changing calibrated power, out-of-order times and
/// distance-model changes between sightings.
@Suite struct LazyDerivedTests {
  @Test(arguments: RSSIFilterKind.allCases, Array(0..<8) as [UInt64])
  func readValuesMatchEagerDerivation(kind: RSSIFilterKind, seed: UInt64) throws {
    var generator = SeededGenerator(seed: seed)
    var settings = PresenceSettings()
    settings.rssi.filter = kind
    var tracker = PresenceTracker(settings: settings)
    let id = BeaconID.iBeacon(Fixtures.vanBeacon)
    // The eager reference: the same filter fed the same readings, and the model in force at each
    // sighting applied at once.
    var filter = PresenceRSSIFilter(kind, settings: settings.rssi)
    var expected: (smoothed: Double?, distance: Double?, proximity: Proximity)?
    var t = 0.0
    for n in 0..<300 {
      t += Double.random(in: 0...0.3, using: &generator)
      let time = Timestamp(seconds: Int.random(in: 0..<10, using: &generator) == 0 ? t - 1 : t)
      let rssi: Int? =
        Int.random(in: 0..<6, using: &generator) == 0 ? nil : Int.random(in: -95 ... -30, using: &generator)
      let power = Int8.random(in: -70 ... -50, using: &generator)
      let frame = BeaconFrame.iBeacon(IBeaconFrame(identity: Fixtures.vanBeacon, measuredPower: power))
      let events = tracker.observe(
        frame, from: Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: rssi), at: time)
      if let rssi, RSSI.isKnown(rssi) { filter.add(Double(rssi), at: time) }
      let model = tracker.settings.distance
      let smoothed = filter.value(at: time)
      let distance = smoothed.flatMap { model.distance(rssi: $0, powerAt1m: Int(power)) }
      expected = (smoothed, distance, model.proximity(distance: distance))

      if case .entered(let entered)? = events.first {
        #expect(entered.smoothedRSSI == expected?.smoothed && entered.distance == expected?.distance)
      }
      // Read now and then, as events and selection do.
      if Bool.random(using: &generator) {
        let beacon = try #require(tracker.beacon(id))
        #expect(beacon.smoothedRSSI == expected?.smoothed, "\(kind) seed \(seed) sighting \(n)")
        #expect(beacon.distance == expected?.distance, "\(kind) seed \(seed) sighting \(n)")
        #expect(beacon.proximity == expected?.proximity, "\(kind) seed \(seed) sighting \(n)")
        #expect(tracker.inRange == [beacon])
      }
      // A model change between sightings applies from the next sighting only.
      if Int.random(in: 0..<20, using: &generator) == 0 {
        var changed = tracker.settings
        changed.distance.coefficientB = Double.random(in: 5...9, using: &generator)
        changed.distance.nearWithin = Double.random(in: 1...5, using: &generator)
        tracker.settings = changed
        let beacon = try #require(tracker.beacon(id))
        #expect(beacon.distance == expected?.distance, "\(kind) seed \(seed) after a change at \(n)")
        #expect(beacon.proximity == expected?.proximity, "\(kind) seed \(seed) after a change at \(n)")
      }
    }
    let exited = tracker.lost(Fixtures.vanAddress, at: Timestamp(seconds: t + 1))
    guard case .exited(let beacon, _)? = exited.first else {
      Issue.record("no exit")
      return
    }
    #expect(beacon.smoothedRSSI == expected?.smoothed && beacon.distance == expected?.distance)
    #expect(beacon.proximity == expected?.proximity)
  }
}
