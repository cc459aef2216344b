import BeaconCore
import BeaconTestSupport
import Testing

/// The active-beacon rules of docs/DESIGN.md, Behaviour, run through the real bridge on a virtual clock.
@Suite struct ActiveBeaconSelectorTests {
  func run(_ scenario: Scenario) async throws -> (EventLog, SimulationHost) {
    let log = EventLog()
    let host = try await ScenarioRunner(scenario: scenario).run(emit: log.observer)
    return (log, host)
  }

  func activeChanges(_ log: EventLog) -> [(Double, String?)] {
    log.events.compactMap { e in
      if case .activeBeaconChanged(let a) = e.event {
        return ((e.at.seconds * 1e6).rounded() / 1e6, a?.deviceId.rawValue)
      }
      return nil
    }
  }

  @Test func strongUnpairedBeaconNeverBecomesActive() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    var g = SeededGenerator(seed: 1)
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.strangerAddress, identity: Fixtures.strangerBeacon, rssi: { _ in -35 }, from: 0,
        until: 60
      )
      .entries(using: &g))
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.vanAddress, identity: Fixtures.vanBeacon, rssi: { _ in -80 }, from: 10, until: 60
      )
      .entries(using: &g))
    let (log, _) = try await run(scenario)
    let changes = activeChanges(log)
    #expect(changes.count == 1)
    #expect(changes.first?.1 == "UNIT-0042")
    #expect(log.count("beaconEntered") == 2)
  }

  @Test func candidateNeedsItsDwell() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    // Two sightings 1.5 s apart: not enough; the third, 2 s after the first, qualifies.
    for t in [0, 1.5, 2.0] {
      scenario.add([
        .init(
          at: t,
          action: .advertisement(
            address: Fixtures.vanAddress, rssi: -60,
            payload: .structured(
              manufacturerData: [Fixtures.iBeaconData(Fixtures.vanBeacon)], serviceData: [], txPower: nil)))
      ])
    }
    let (log, _) = try await run(scenario)
    let changes = activeChanges(log)
    #expect(changes.count == 1)
    #expect(changes.first?.0 == 2.0)
  }

  /// A second paired beacon (another vehicle's) passing by at trip start, stronger for a few
  /// seconds, does not beat the in-vehicle beacon.
  @Test(arguments: [11, 12, 13] as [UInt64])
  func passingPairedBeaconDoesNotWin(seed: UInt64) async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing, Fixtures.otherVanPairing]
    var g = SeededGenerator(seed: seed)
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.vanAddress, identity: Fixtures.vanBeacon, rssi: { _ in -68 }, loss: 0.4, from: 0,
        until: 90
      )
      .entries(using: &g))
    // Another van pulls up beside at 28 s: 20 dB stronger, advertising at 10 Hz, for 4 s.
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.otherVanAddress, identity: Fixtures.otherVanBeacon, rssi: { _ in -48 },
        interval: 0.1, from: 28,
        until: 32
      ).entries(using: &g))
    scenario.add([
      .init(at: 30, action: .tripStart(tripId: "t1")),
      .init(at: 31, action: .tripEvents(tripId: "t1", events: [Fixtures.event("braking", at: 31)])),
      .init(at: 90, action: .tripEnd(tripId: "t1")),
    ])
    let (log, host) = try await run(scenario)
    #expect(activeChanges(log).map(\.1) == ["UNIT-0042"])
    #expect(host.posted.map(\.deviceId) == ["UNIT-0042"])
  }

  @Test func sustainedStrongerCandidateTakesOver() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing, Fixtures.otherVanPairing]
    var g = SeededGenerator(seed: 3)
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.vanAddress, identity: Fixtures.vanBeacon, rssi: { _ in -80 }, noise: 1, from: 0,
        until: 60
      )
      .entries(using: &g))
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.otherVanAddress, identity: Fixtures.otherVanBeacon, rssi: { _ in -60 }, noise: 1,
        from: 20, until: 60
      ).entries(using: &g))
    let (log, _) = try await run(scenario)
    let changes = activeChanges(log)
    #expect(changes.map(\.1) == ["UNIT-0042", "UNIT-0099"])
    // Dwell (2 s) plus the sustain (5 s) after the smoothed value clears the 6 dB margin.
    let switchTime = try #require(changes.last?.0)
    #expect(switchTime >= 27 && switchTime <= 32)
  }

  @Test func activeBeaconIsHeldAfterItExits() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    var g = SeededGenerator(seed: 4)
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.vanAddress, identity: Fixtures.vanBeacon, rssi: { _ in -60 }, from: 0, until: 10
      )
      .entries(using: &g))
    scenario.duration = 60
    let (log, _) = try await run(scenario)
    let exit = log.events.first { $0.event.type == "beaconExited" }
    // Presence lets it go after 10 s of silence (a little more for a beacon seen only 11 times),
    // while the active beacon is held for 30 s after its last sighting.
    let exitTime = try #require(exit?.at.seconds)
    #expect(exitTime >= 20 && exitTime < 25)
    #expect(activeChanges(log).map(\.0) == [2, 40])
    #expect(activeChanges(log).last?.1 == nil)
  }

  @Test func wildcardPairingMatchesAnyMinorAndTheMostSpecificWins() {
    let any = Pairing(uuid: Fixtures.fleet, major: 1, minor: nil, deviceId: "FLEET-1")
    let exact = Fixtures.vanPairing
    let set = PairingSet([any, exact])
    #expect(set.pairing(for: .iBeacon(Fixtures.vanBeacon))?.deviceId == "UNIT-0042")
    #expect(set.pairing(for: .iBeacon(Fixtures.otherVanBeacon))?.deviceId == "FLEET-1")
    #expect(set.pairing(for: .iBeacon(Fixtures.strangerBeacon)) == nil)
    #expect(set.pairing(for: .altBeacon(Fixtures.otherVanBeacon))?.deviceId == "FLEET-1")
    #expect(
      set.pairing(for: .eddystone(namespace: Array(repeating: 1, count: 10), instance: [1, 2, 3, 4, 5, 6]))
        == nil)
  }

  /// A pairing's device ID is a `DeviceID`: one that breaks the rule is refused where it is
  /// built, so no pairing can hold it.
  @Test(arguments: [" ", "bad\nid", ""])
  func invalidDeviceIDsAreRefusedWhereTheyAreBuilt(text: String) {
    #expect(throws: IdentifierError.self) { try DeviceID(text) }
  }

  @Test func aMinorWithoutAMajorIsRefused() {
    let pairing = Pairing(uuid: Fixtures.fleet, major: nil, minor: 3, deviceId: "X")
    #expect(throws: IdentifierError.self) { try pairing.validate() }
  }

  @Test func unpairingTheActiveBeaconDropsIt() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    var g = SeededGenerator(seed: 5)
    scenario.add(
      ScriptedBeacon(
        address: Fixtures.vanAddress, identity: Fixtures.vanBeacon, rssi: { _ in -60 }, from: 0, until: 20
      )
      .entries(using: &g))
    scenario.add([.init(at: 10.5, action: .unpair(deviceId: "UNIT-0042"))])
    let (log, _) = try await run(scenario)
    #expect(activeChanges(log).map(\.1) == ["UNIT-0042", nil])
    #expect(activeChanges(log).last?.0 == 10.5)
  }
}
