import BeaconCore
import BeaconTestSupport
import Testing

/// Trip start, the late window, the unresolved policy and tagging (docs/DESIGN.md, Behaviour),
/// through the real bridge on a virtual clock.
@Suite struct TripTaggingTests {
  func vanBeacon(from: Double, until: Double, seed: UInt64 = 1, loss: Double = 0) -> [Scenario.Entry] {
    var g = SeededGenerator(seed: seed)
    return ScriptedBeacon(
      address: Fixtures.vanAddress, identity: Fixtures.vanBeacon, rssi: { _ in -62 }, loss: loss, from: from,
      until: until
    ).entries(using: &g)
  }

  func run(_ scenario: Scenario) async throws -> (EventLog, SimulationHost) {
    let log = EventLog()
    let host = try await ScenarioRunner(scenario: scenario).run(emit: log.observer)
    return (log, host)
  }

  @Test func activeBeaconAtTripStartTagsEveryBatch() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    scenario.add(vanBeacon(from: 0, until: 100, loss: 0.4))
    scenario.add([
      .init(at: 20, action: .tripStart(tripId: "t1")),
      .init(at: 30, action: .tripEvents(tripId: "t1", events: [Fixtures.event("braking", at: 29)])),
      .init(at: 60, action: .tripEvents(tripId: "t1", events: [Fixtures.event("speeding", at: 55)])),
      .init(at: 90, action: .tripEnd(tripId: "t1")),
    ])
    let (log, host) = try await run(scenario)
    #expect(host.posted.map(\.deviceId) == ["UNIT-0042", "UNIT-0042"])
    #expect(host.posted.map(\.sequence) == [0, 1])
    #expect(host.posted.allSatisfy { $0.resolution.reason == "activeAtStart" })
    let snapshot = try #require(host.posted.first?.beacon)
    #expect(snapshot.id == .iBeacon(Fixtures.vanBeacon))
    #expect(snapshot.takenAt == Timestamp(seconds: 20))
    #expect(log.count("batchHeld") == 0)
  }

  /// A beacon that arrives 20 s after trip start tags the trip, and batches posted before that
  /// are tagged too.
  @Test func lateBeaconTagsEarlierBatches() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    scenario.add(vanBeacon(from: 30, until: 100))
    scenario.add([
      .init(at: 10, action: .tripStart(tripId: "t1")),
      .init(at: 15, action: .tripEvents(tripId: "t1", events: [Fixtures.event("braking", at: 14)])),
      .init(at: 25, action: .tripEvents(tripId: "t1", events: [Fixtures.event("cornering", at: 24)])),
      .init(at: 50, action: .tripEvents(tripId: "t1", events: [Fixtures.event("speeding", at: 49)])),
      .init(at: 80, action: .tripEnd(tripId: "t1")),
    ])
    let (log, host) = try await run(scenario)
    #expect(log.count("batchHeld") == 2)
    #expect(host.posted.map(\.sequence) == [0, 1, 2])
    #expect(host.posted.map(\.deviceId) == ["UNIT-0042", "UNIT-0042", "UNIT-0042"])
    #expect(host.posted.allSatisfy { $0.resolution.reason == "lateArrival" })
    // Tagged when the beacon became active: its second sighting, 2 s after the first (30 s).
    let tagged = log.events.first { if case .tripTagged = $0.event { true } else { false } }
    #expect(tagged?.at == Timestamp(seconds: 32))
    // The held batches went out at tagging time, before the batch of 50 s.
    let postedTimes = log.events.filter { $0.event.type == "batchPosted" }.map(\.at.seconds)
    #expect(postedTimes == [32, 32, 50])
  }

  /// No beacon at all leaves the trip unresolved and held; nothing is dropped, and `assign`
  /// tags it later.
  @Test func noBeaconHoldsTheTripUntilAssigned() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    scenario.add([
      .init(at: 0, action: .tripStart(tripId: "t1")),
      .init(at: 10, action: .tripEvents(tripId: "t1", events: [Fixtures.event("braking", at: 9)])),
      .init(
        at: 70,
        action: .tripEvents(
          tripId: "t1", events: [Fixtures.event("unknownThing", at: 65, extra: ["g": .double(0.42)])])),
      .init(at: 90, action: .tripEnd(tripId: "t1")),
    ])
    let (log, host) = try await run(scenario)
    #expect(host.posted.isEmpty)
    #expect(log.count("batchHeld") == 2)
    let tagged = log.events.compactMap { e -> TripResolution? in
      if case .tripTagged(_, let r) = e.event { return r }
      return nil
    }
    #expect(tagged == [.unresolved])
    // The late window (60 s) expired: unresolved from then on.
    #expect(log.events.first { $0.event.type == "tripTagged" }?.at.seconds ?? 0 >= 60)
    let ended = log.events.last
    if case .tripEnded(_, let resolution)? = ended?.event {
      #expect(!resolution.isFinal)
    } else {
      Issue.record("expected tripEnded last, got \(String(describing: ended))")
    }

    // Held, then assigned by hand: everything goes out, in order, with every field.
    scenario.add([.init(at: 100, action: .tripAssign(tripId: "t1", deviceId: "UNIT-7777"))])
    let (_, assignedHost) = try await run(scenario)
    #expect(assignedHost.posted.map(\.sequence) == [0, 1])
    #expect(assignedHost.posted.map(\.deviceId) == ["UNIT-7777", "UNIT-7777"])
    #expect(assignedHost.posted.last?.events.first?.fields["g"] == .double(0.42))
    #expect(assignedHost.posted.last?.events.first?.kind == .other)
  }

  @Test func fallbackPolicyUsesTheConfiguredDeviceId() async throws {
    var scenario = Scenario()
    try scenario.configuration.set("unresolvedPolicy", to: "fallback")
    try scenario.configuration.set("fallbackDeviceId", to: "DEPOT-1")
    try scenario.configuration.set("lateWindow", to: "30")
    scenario.add([
      .init(at: 0, action: .tripStart(tripId: "t1")),
      .init(at: 10, action: .tripEvents(tripId: "t1", events: [Fixtures.event("braking", at: 9)])),
      .init(at: 40, action: .tripEvents(tripId: "t1", events: [Fixtures.event("speeding", at: 39)])),
      .init(at: 50, action: .tripEnd(tripId: "t1")),
    ])
    let (log, host) = try await run(scenario)
    #expect(host.posted.map(\.deviceId) == ["DEPOT-1", "DEPOT-1"])
    #expect(host.posted.map(\.resolution.reason) == ["fallback", "fallback"])
    #expect(log.events.first { $0.event.type == "tripTagged" }?.at.seconds ?? 0 >= 30)
  }

  @Test func shortTripEndingBeforeTheWindowTakesThePolicy() async throws {
    var scenario = Scenario()
    scenario.add([
      .init(at: 0, action: .tripStart(tripId: "t1")),
      .init(at: 5, action: .tripEvents(tripId: "t1", events: [Fixtures.event("braking", at: 4)])),
      .init(at: 10, action: .tripEnd(tripId: "t1")),
    ])
    let (log, host) = try await run(scenario)
    #expect(host.posted.isEmpty)
    #expect(log.types().suffix(2) == ["tripTagged", "tripEnded"])
  }

  @Test func beaconAfterTheLateWindowDoesNotTagTheTrip() async throws {
    var scenario = Scenario()
    scenario.pairings = [Fixtures.vanPairing]
    scenario.add(vanBeacon(from: 70, until: 100))
    scenario.add([
      .init(at: 0, action: .tripStart(tripId: "t1")),
      .init(at: 5, action: .tripEvents(tripId: "t1", events: [Fixtures.event("braking", at: 4)])),
      .init(at: 100, action: .tripEnd(tripId: "t1")),
    ])
    let (_, host) = try await run(scenario)
    #expect(host.posted.isEmpty)
  }

  @Test func refusedTripCallsAreReportedNotFatal() async throws {
    var scenario = Scenario()
    scenario.add([
      .init(at: 0, action: .tripEvents(tripId: "nope", events: [])),
      .init(at: 1, action: .tripStart(tripId: "t1")),
      .init(at: 2, action: .tripStart(tripId: "t1")),
      .init(at: 3, action: .tripEnd(tripId: "t1")),
      .init(at: 4, action: .tripEnd(tripId: "t1")),
      .init(at: 5, action: .tripStart(tripId: "t1")),
    ])
    let lines = LineLog()
    try await ScenarioRunner(scenario: scenario).run(emit: { _ in }, report: lines.append)
    #expect(lines.details.count == 4)
    #expect(lines.details[0].contains("no trip nope"))
    #expect(lines.details[1].contains("already started"))
    #expect(lines.details[2].contains("already ended"))
    #expect(lines.details[3].contains("already ended"))
  }
}

final class LineLog: Sendable {
  private let lines = MutexBox<[String]>([])
  var details: [String] { lines.value }
  func append(_ line: ScenarioLine) {
    lines.mutate { $0.append(line.fields.first { $0.key == "detail" }?.value.stringValue ?? "") }
  }
}
