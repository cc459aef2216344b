import BeaconCore
import BeaconTestSupport
import Foundation
import Synchronization
import Testing

/// Open trips are capped (`[Trips] maxOpenTrips`): past the cap `trip start` is
/// refused with a sentence, the same one at every door; a journal holding more open trips than
/// the cap is restored with the oldest ended, so memory does not grow with what a recorder
/// forgot to end.
@Suite struct OpenTripCapTests {
  func configuration(cap: Int) -> BridgeConfiguration {
    var configuration = BridgeConfiguration()
    configuration.trips.maxOpenTrips = cap
    return configuration
  }

  @Test func theSettingIsDocumentedWithARange() throws {
    var configuration = BridgeConfiguration()
    #expect(configuration.value(of: "maxOpenTrips") == "64")
    #expect(BridgeConfiguration.section(of: "maxOpenTrips") == "Trips")
    try configuration.set("maxOpenTrips", to: "3")
    #expect(configuration.trips.maxOpenTrips == 3)
    for bad in ["0", "100001", "2.5", "-1", "lots"] {
      #expect(throws: ConfigurationError.self) { try configuration.set("maxOpenTrips", to: bad) }
    }
    #expect(BridgeConfiguration.key(named: "maxOpenTrips")?.number?.rangeText == "1 to 100000")
  }

  @Test func startPastTheCapIsRefusedUntilATripEnds() throws {
    var pipeline = BeaconPipeline(configuration: configuration(cap: 2))
    _ = try pipeline.startTrip("a", at: Timestamp(seconds: 1))
    _ = try pipeline.startTrip("b", at: Timestamp(seconds: 2))
    do {
      _ = try pipeline.startTrip("c", at: Timestamp(seconds: 3))
      Issue.record("a third trip started past maxOpenTrips = 2")
    } catch {
      #expect(error.code == .tooManyOpenTrips)
      #expect(
        error.description
          == "trip c not started: 2 trips are open, the most [Trips] maxOpenTrips allows; end one with 'trip end', or raise maxOpenTrips"
      )
    }
    #expect(pipeline.resolver.trip("c") == nil)
    // An ended trip no longer counts, even while its batches are held.
    _ = try pipeline.endTrip("a", at: Timestamp(seconds: 4))
    _ = try pipeline.startTrip("c", at: Timestamp(seconds: 5))
    #expect(pipeline.resolver.openTripCount == 2)
    // A trip forgotten (its start could not be recorded) frees its place.
    pipeline.cancelTrip("c")
    #expect(pipeline.resolver.openTripCount == 1)
    _ = try pipeline.startTrip("d", at: Timestamp(seconds: 6))
  }

  /// The bridge (the façade every door calls) refuses with the same sentence, as a trip error.
  @Test func theBridgeRefusesWithTheSameSentence() async throws {
    let bridge = BeaconBridge(host: RecordingHost(configuration: configuration(cap: 1)), clock: TestClock())
    try await bridge.start()
    try await bridge.tripStart("first")
    do {
      try await bridge.tripStart("second")
      Issue.record("a second trip started past maxOpenTrips = 1")
    } catch {
      #expect(error.code == .trip)
      #expect(error.description.contains("trip second not started: 1 trips are open"))
    }
    try await bridge.tripEnd("first")
    try await bridge.tripStart("second")
  }

  /// A scenario's refused start is a `rejected` line with the sentence.
  @Test func aScenarioReportsTheRefusal() async throws {
    let json = #"""
      {"config": {"maxOpenTrips": 1},
       "events": [{"at": 1, "tripStart": {"tripId": "t1"}},
                  {"at": 2, "tripStart": {"tripId": "t2"}}]}
      """#
    let scenario = try Scenario.decode(Data(json.utf8))
    let lines = Mutex<[String]>([])
    try await ScenarioRunner(scenario: scenario).run(
      emit: { _ in },
      report: { line in
        lines.withLock { $0.append(line.jsonLine) }
      })
    let rejected = lines.withLock { $0 }
    #expect(rejected.count == 1, "\(rejected)")
    #expect(rejected.first?.contains(#""type":"rejected""#) == true)
    #expect(rejected.first?.contains("trip t2 not started: 1 trips are open") == true, "\(rejected)")
  }

  /// Restored open trips beyond the cap: the oldest are ended (oldest first), the newest kept.
  @Test func aRestoreEndsTheOldestOpenTripsPastTheCap() throws {
    var pipeline = BeaconPipeline(configuration: configuration(cap: 2))
    let kept = (0..<5).map { i in
      JournaledTrip(
        tripId: TripID(stringLiteral: "t\(i)"), resolution: .pending(deadline: .zero), beaconMode: true,
        ended: false, batches: [],
        nextSequence: 0)
    }
    let steps = pipeline.restore(kept, at: Timestamp(seconds: 100))
    let ended = steps.compactMap { step -> TripID? in
      if case .event(.tripEnded(let id, _)) = step { return id }
      return nil
    }
    #expect(ended == ["t0", "t1", "t2"])
    #expect(pipeline.resolver.openTripCount == 2)
    #expect(pipeline.resolver.trip("t3")?.endedAt == nil)
    #expect(pipeline.resolver.trip("t4")?.endedAt == nil)
  }

  /// Through the bridge with a journal: the ended trips are journaled as ended, so the next
  /// start does not restore them open again.
  @Test func theBridgeJournalsTheTripsARestoreEnded() async throws {
    let journal = MemoryJournal()
    do {
      let bridge = BeaconBridge(
        host: RecordingHost(configuration: configuration(cap: 10)), clock: TestClock(), journal: journal)
      try await bridge.start()
      for i in 0..<6 { try await bridge.tripStart(TripID("t\(i)")) }
    }
    let bridge = BeaconBridge(
      host: RecordingHost(configuration: configuration(cap: 4)), clock: TestClock(), journal: journal)
    try await bridge.start()
    let open = await bridge.status.trips.filter { $0.endedAt == nil }.map(\.tripId)
    #expect(open.sorted() == ["t2", "t3", "t4", "t5"])
    let reloaded = try await journal.load()
    #expect(reloaded.filter { !$0.ended }.map(\.tripId).sorted() == ["t2", "t3", "t4", "t5"])
  }
}
