import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconCore

/// `BeaconIndex` (presence's id → entry table) against a `Dictionary` doing the same
/// operations, with keys chosen to collide and to share home slots, and `PresenceTracker` on it
/// against a plain model of who is in range.
@Suite struct BeaconIndexTests {
  /// Random inserts, swap-removes (as the tracker does them) and lookups; the keys come from a
  /// tiny set, so runs of equal keys and of equal home slots are the common case, and the table
  /// grows several times.
  @Test(arguments: [1, 2, 7, 1_000])
  func agreesWithADictionaryUnderCollisions(keySpace: UInt64) {
    var random = SeededGenerator(seed: 19 &+ keySpace)
    var index = BeaconIndex(capacity: 4)
    // entries[i] is the identity stored at entry i; keyOf its key.
    var entries: [Int] = []
    var keyOf: [Int: UInt64] = [:]
    var model: [Int: Int] = [:]  // identity → entry
    var nextIdentity = 0
    // Fewer steps where every key is equal: each lookup then walks the whole run (in a debug
    // build, seconds of a test run's shared pool); 1,200 still grows the table eight times.
    for _ in 0..<(keySpace < 8 ? 1_200 : 4_000) {
      if entries.isEmpty || Int.random(in: 0..<3, using: &random) > 0 {
        let identity = nextIdentity
        nextIdentity += 1
        // Keys that differ only in high bits share a home slot; a small key space repeats keys.
        let key = UInt64.random(in: 0..<keySpace, using: &random) << 40 | (keySpace == 1_000 ? 5 : 0)
        keyOf[identity] = key
        entries.append(identity)
        index.insert(key, index: entries.count - 1)
        model[identity] = entries.count - 1
      } else {
        let position = Int.random(in: 0..<entries.count, using: &random)
        let identity = entries[position]
        index.remove(keyOf[identity]!, index: position)
        model[identity] = nil
        let last = entries.count - 1
        if position != last {
          entries.swapAt(position, last)
          index.move(keyOf[entries[position]]!, from: last, to: position)
          model[entries[position]] = position
        }
        entries.removeLast()
      }
      #expect(index.count == model.count)
      // Every present identity is found where the model has it; a removed one is not found.
      for _ in 0..<4 {
        let identity = Int.random(in: 0..<max(nextIdentity, 1), using: &random)
        let key = keyOf[identity] ?? 0
        let found = index.find(key) { entries[$0] == identity }
        #expect(found == model[identity])
      }
    }
    for (identity, position) in model {
      #expect(index.find(keyOf[identity]!) { entries[$0] == identity } == position)
    }
  }

  @Test func equalIdentitiesHaveEqualKeysAndKindsDiffer() {
    let seed: UInt64 = 0x1234
    let identity = BeaconIdentity(uuid: UUID(), major: 1, minor: 2)
    let copy = BeaconIdentity(uuid: identity.uuid, major: 1, minor: 2)
    #expect(BeaconID.iBeacon(identity).indexKey(seed: seed) == BeaconID.iBeacon(copy).indexKey(seed: seed))
    #expect(
      BeaconID.iBeacon(identity).indexKey(seed: seed) != BeaconID.altBeacon(identity).indexKey(seed: seed))
    #expect(
      BeaconID.iBeacon(identity).indexKey(seed: seed)
        != BeaconID.iBeacon(BeaconIdentity(uuid: identity.uuid, major: 1, minor: 3)).indexKey(seed: seed))
    let a = BeaconID.eddystone(namespace: Array(0..<10), instance: Array(10..<16))
    let b = BeaconID.eddystone(namespace: Array(0..<10), instance: Array(10..<16))
    let c = BeaconID.eddystone(namespace: Array(0..<10), instance: Array(10..<15) + [99])
    #expect(a.indexKey(seed: seed) == b.indexKey(seed: seed))
    #expect(a.indexKey(seed: seed) != c.indexKey(seed: seed))
    #expect(a.indexKey(seed: seed) != a.indexKey(seed: seed + 1))
  }

  /// The tracker on the table: many identities of every kind (Eddystone ones differing in one
  /// byte) entering, being seen again, lost and timing out, against a set of who is in range.
  @Test func trackerAgreesWithAModelOfWhoIsInRange() {
    var random = SeededGenerator(seed: 1919)
    var settings = PresenceSettings()
    settings.exitTimeout = 5
    settings.exitTimeoutMax = 5
    var tracker = PresenceTracker(settings: settings)
    let uuid = UUID(uuidString: "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!
    let frames: [BeaconFrame] =
      (0..<150).map { i -> BeaconFrame in
        let identity = BeaconIdentity(uuid: uuid, major: UInt16(i % 3), minor: UInt16(i))
        return i % 2 == 0
          ? .iBeacon(IBeaconFrame(identity: identity, measuredPower: -59))
          : .altBeacon(AltBeaconFrame(companyID: 0x0118, identity: identity, referenceRSSI: -60, reserved: 0))
      }
      + (0..<50).map { i in
        .eddystoneUID(
          EddystoneUIDFrame(
            txPower: -20, namespace: Array(repeating: 7, count: 10), instance: [0, 0, 0, 0, 0, UInt8(i)]))
      }
    let addresses = (0..<20).map { BluetoothAddress(bytes: [0xC0, 0, 0, 0, 0, UInt8($0)])! }
    var lastSeen: [BeaconID: (time: Double, address: BluetoothAddress)] = [:]
    var time = 0.0
    for step in 0..<6_000 {
      time += 0.01
      if step % 500 == 499 {
        // The backend loses an address: everyone last heard from it exits.
        let address = addresses.randomElement(using: &random)!
        let exits = tracker.lost(address, at: Timestamp(seconds: time))
        let expected = Set(lastSeen.filter { $0.value.address == address }.keys)
        #expect(
          Set(exits.map { if case .exited(let b, _) = $0 { b.id } else { nil } }.compactMap { $0 })
            == expected)
        for id in expected { lastSeen[id] = nil }
      } else if step % 100 == 99 {
        let exits = tracker.expire(at: Timestamp(seconds: time))
        let expected = Set(lastSeen.filter { time - $0.value.time >= 5 }.keys)
        #expect(
          Set(exits.map { if case .exited(let b, _) = $0 { b.id } else { nil } }.compactMap { $0 })
            == expected)
        for id in expected { lastSeen[id] = nil }
      } else {
        // A skewed choice, so that some beacons go quiet long enough to time out.
        let pick = Int.random(in: 0..<frames.count, using: &random)
        let frame = frames[pick % (step % 1_000 < 500 ? frames.count : 60)]
        let address = addresses.randomElement(using: &random)!
        let ad = Advertisement(address: address, rssi: -60 - pick % 20, manufacturerData: [])
        let events = tracker.observe(frame, from: ad, at: Timestamp(seconds: time))
        let id = frame.beaconID!
        #expect(events.count == (lastSeen[id] == nil ? 1 : 0))
        lastSeen[id] = (time, address)
      }
      // The whole set (sorted, so not cheap in a debug build) every 20 steps and after every
      // exit; a dozen beacons one by one at every step.
      if step % 20 == 0 || step % 100 == 99 || step % 500 == 499 {
        #expect(Set(tracker.inRange.map(\.id)) == Set(lastSeen.keys))
      }
      for id in frames.prefix(12).map({ $0.beaconID! }) {
        #expect((tracker.beacon(id) != nil) == (lastSeen[id] != nil))
      }
    }
  }
}

/// After a flood of beacons has come and gone, presence's tables are rebuilt to fit (they keep
/// their peak's capacity otherwise: 3 MB of index after 100,000 random identities), and every
/// beacon still in range is still found.
@Suite struct PresenceCompactionTests {
  @Test func theIndexShrinksAfterAFloodAndTheRestAreStillFound() throws {
    var tracker = PresenceTracker()
    func identity(_ n: Int) -> BeaconIdentity {
      BeaconIdentity(uuid: Fixtures.fleet, major: UInt16(n / 1000), minor: UInt16(n % 1000))
    }
    func address(_ n: Int) -> BluetoothAddress {
      BluetoothAddress(bytes: [0xC0, 0, 0, 0, UInt8(n / 256), UInt8(n % 256)])!
    }
    func sight(_ n: Int, at seconds: Double) -> [PresenceEvent] {
      let frame = BeaconFrame.iBeacon(IBeaconFrame(identity: identity(n), measuredPower: -59))
      return tracker.observe(
        frame, from: Fixtures.iBeacon(identity(n), address: address(n), rssi: -60),
        at: Timestamp(seconds: seconds))
    }
    for n in 0..<5000 { _ = sight(n, at: 0) }
    let peak = tracker.indexCapacity
    #expect(peak >= 8192)
    // Ten stay; the other 4,990 time out.
    for n in 0..<10 { _ = sight(n, at: 50) }
    #expect(tracker.expire(at: Timestamp(seconds: 55)).count == 4990)
    #expect(
      tracker.indexCapacity <= 1024, "the index kept \(tracker.indexCapacity) slots of its peak \(peak)")
    #expect(tracker.inRange.count == 10)
    for n in 0..<10 {
      #expect(tracker.beacon(.iBeacon(identity(n)))?.sightings == 2, "beacon \(n) lost by the rebuild")
    }
    // The rebuilt tables keep working: a new beacon, another sighting, an address lost.
    #expect(sight(6000, at: 56).count == 1)
    #expect(sight(3, at: 56).isEmpty)
    #expect(tracker.lost(address(4), at: Timestamp(seconds: 57)).count == 1)
    #expect(tracker.inRange.count == 10)
    #expect(tracker.beacon(.iBeacon(identity(4))) == nil)
    #expect(tracker.beacon(.iBeacon(identity(3)))?.sightings == 3)
  }
}
