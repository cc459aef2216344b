import BeaconTestSupport
import Testing

@testable import BeaconCore

/// The clone rule (`CloneWatch`, `BeaconHealthBook.addressChanged`): a paired plain identity
/// heard from two addresses at once, in three 10 s windows, is a possible clone until 300 s pass
/// without it; an address that rotates away is no clone, nor is a pairing by key. Times are the
/// pipeline's own arguments: no clock, no sleep.
@Suite struct CloneRuleTests {
  static let real = Fixtures.vanAddress
  static let copy = BluetoothAddress("DE:AD:BE:EF:00:07")!

  static func pipeline(_ pairings: [Pairing] = [Fixtures.vanPairing]) -> BeaconPipeline {
    BeaconPipeline(pairings: PairingSet(pairings))
  }

  static func sighting(_ address: BluetoothAddress, _ identity: BeaconIdentity = Fixtures.vanBeacon)
    -> SourceEvent
  {
    .sighting(Fixtures.iBeacon(identity, address: address, rssi: -60))
  }

  static func changes(_ steps: [BeaconPipeline.Step]) -> [HealthChange] {
    steps.compactMap { if case .event(.beaconHealth(let c)) = $0 { c } else { nil } }
  }

  /// The real beacon at every whole second, the copy half a second later, from `start` to `end`;
  /// ticks at each second. Returns the health changes.
  static func interleave(
    _ p: inout BeaconPipeline, from start: Double, to end: Double, copy: BluetoothAddress = copy
  ) -> [HealthChange] {
    var out: [HealthChange] = []
    var t = start
    while t <= end {
      out += changes(p.ingest(sighting(real), at: Timestamp(seconds: t)))
      out += changes(p.ingest(sighting(copy), at: Timestamp(seconds: t + 0.5)))
      out += changes(p.tick(at: Timestamp(seconds: t + 0.5)))
      t += 1
    }
    return out
  }

  /// The real beacon alone at every second from `start` to `end`, with ticks.
  static func alone(_ p: inout BeaconPipeline, from start: Double, to end: Double) -> [HealthChange] {
    var out: [HealthChange] = []
    var t = start
    while t <= end {
      out += changes(p.ingest(sighting(real), at: Timestamp(seconds: t)))
      out += changes(p.tick(at: Timestamp(seconds: t)))
      t += 1
    }
    return out
  }

  @Test func twoAddressesInterleavedRepeatedlyAreAPossibleClone() throws {
    var p = Self.pipeline()
    let raised = Self.interleave(&p, from: 0, to: 60)
    // Once, not once per window: the first return is at 1.5 s (the first move only starts the
    // watch), so the third window opens at 21.5 s.
    #expect(raised.map(\.kind) == [.possibleClone])
    let change = try #require(raised.first)
    #expect(change.lastSeen == Timestamp(seconds: 21.5))
    #expect(change.deviceId == "UNIT-0042")
    #expect(change.id == .iBeacon(Fixtures.vanBeacon))
    #expect(change.health.possibleClone)
    #expect(change.health.cloneAddresses == [Self.real, Self.copy])
    #expect(change.fields.contains { $0.key == "possibleClone" && $0.value == .bool(true) })
    let status = try #require(p.pairedBeacons.first)
    #expect(status.health.possibleClone && status.health.cloneAddresses == [Self.real, Self.copy])

    // The copy goes: the real beacon alone clears it 300 s after the last return (61 s: the move
    // back to the real address after the copy's last frame at 60.5 s), and only once.
    let cleared = Self.alone(&p, from: 61, to: 500)
    #expect(cleared.map(\.kind) == [.cloneCleared])
    #expect(cleared.first?.lastSeen == Timestamp(seconds: 61))
    #expect(cleared.first?.health.possibleClone == false)
    #expect(cleared.first?.health.cloneAddresses == [])
    #expect(p.pairedBeacons.first?.health.possibleClone == false)
  }

  /// The clearing deadline is the pipeline's, so a daemon whose deadline loop parks (nothing in
  /// range) still wakes to clear it.
  @Test func theClearingIsADeadline() {
    var p = Self.pipeline()
    _ = Self.interleave(&p, from: 0, to: 30)
    #expect(p.pairedBeacons.first?.health.possibleClone == true)
    var kinds: [HealthChange.Kind] = []
    var clearedAt: Timestamp?
    while let due = p.nextDeadline, due.seconds < 1000 {
      let changes = Self.changes(p.tick(at: due))
      if changes.contains(where: { $0.kind == .cloneCleared }) { clearedAt = due }
      kinds += changes.map(\.kind)
    }
    #expect(kinds == [.cloneCleared, .silent])
    #expect(p.pairedBeacons.first?.health.possibleClone == false)
    // The copy's last frame, at 30.5 s, was the last return.
    #expect(clearedAt == Timestamp(seconds: 30.5 + 300))
  }

  /// A beacon rotating its address (a resolvable private address) is heard from each address in
  /// turn and never again from an old one: no return, no clone, however fast it rotates.
  @Test func oneAddressRotatingIsNoClone() {
    var p = Self.pipeline()
    var raised: [HealthChange] = []
    for t in 0..<600 {
      // A new address every 2 s.
      let address = BluetoothAddress(uint48: 0x5A00_0000_0000 + UInt64(t / 2))!
      raised += Self.changes(p.ingest(Self.sighting(address), at: Timestamp(seconds: Double(t))))
      raised += Self.changes(p.tick(at: Timestamp(seconds: Double(t))))
    }
    #expect(raised.isEmpty)
    #expect(p.pairedBeacons.first?.health.possibleClone == false)
    // The watch keeps a fixed few addresses, however many it heard.
    #expect(p.health.clones[.iBeacon(Fixtures.vanBeacon)].map { $0.addresses.count } == CloneWatch.kept)
  }

  /// Interleaving in one window only (two units briefly set to one identity), or in windows
  /// further apart than the quiet period, is not enough.
  @Test func windowsMustComeTogether() {
    var p = Self.pipeline()
    #expect(Self.interleave(&p, from: 0, to: 5).isEmpty)
    _ = Self.alone(&p, from: 6, to: 400)
    #expect(Self.interleave(&p, from: 401, to: 409).isEmpty)
    _ = Self.alone(&p, from: 410, to: 800)
    #expect(Self.interleave(&p, from: 801, to: 809).isEmpty)
    #expect(p.pairedBeacons.first?.health.possibleClone == false)
    // Three windows, each within the quiet period of the last, do add up.
    _ = Self.alone(&p, from: 810, to: 900)
    #expect(Self.interleave(&p, from: 901, to: 909).isEmpty)
    _ = Self.alone(&p, from: 910, to: 1000)
    #expect(Self.interleave(&p, from: 1001, to: 1009).map(\.kind) == [.possibleClone])
  }

  /// A pairing by key proves itself whatever its address: two addresses sending a resolved EID
  /// at once are never a clone (a replay is the authenticator's to refuse).
  @Test func aPairingByKeyIsNeverAClone() {
    let key = ScriptedAuthenticator.eid
    var p = Self.pipeline([Pairing(key: key, deviceId: DeviceID("UNIT-E1"))])
    p.setAuthenticator(ScriptedAuthenticator(eids: [42: .resolved(key)]))
    func eid(_ address: BluetoothAddress) -> SourceEvent {
      .sighting(
        Advertisement(
          address: address, rssi: -60,
          serviceData: [ServiceData(uuid: .eddystone, data: ScriptedAuthenticator.eidFrame(42))]))
    }
    var raised: [HealthChange] = []
    for t in 0..<60 {
      raised += Self.changes(p.ingest(eid(Self.real), at: Timestamp(seconds: Double(t))))
      raised += Self.changes(p.ingest(eid(Self.copy), at: Timestamp(seconds: Double(t) + 0.5)))
    }
    #expect(p.tracker.beacon(.keyed(key)) != nil)
    #expect(raised.isEmpty)
    #expect(p.health.clones.isEmpty)
  }

  /// Unpaired identities are not watched at all.
  @Test func anUnpairedIdentityIsNotWatched() {
    var p = Self.pipeline([])
    #expect(Self.interleave(&p, from: 0, to: 60).isEmpty)
    #expect(p.health.clones.isEmpty)
  }

  /// A pairing that leaves out the minor matches many identities; a flood of them moving keeps
  /// at most `maximumCloneWatches` watches.
  @Test func theWatchesAreBounded() {
    var p = Self.pipeline([Pairing(uuid: Fixtures.fleet, major: 1, minor: nil, deviceId: "UNIT-ANY")])
    for minor in 0..<1000 {
      let identity = BeaconIdentity(uuid: Fixtures.fleet, major: 1, minor: UInt16(minor))
      let t = Timestamp(seconds: Double(minor) / 100)
      _ = p.ingest(Self.sighting(Self.real, identity), at: t)
      _ = p.ingest(Self.sighting(Self.copy, identity), at: t)
    }
    #expect(p.health.clones.count == BeaconHealthBook.maximumCloneWatches)
  }
}
