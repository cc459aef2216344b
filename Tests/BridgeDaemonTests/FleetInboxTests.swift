import BeaconTestSupport
import Testing

@testable import BridgeDaemon

/// The fleet link's inbox keeps every desired document and trip end, in order, however much
/// beacon news comes between, and folds the news into one look.
@Suite struct FleetInboxTests {
  func message(_ text: String) -> FleetInput {
    .message(MQTTIncoming(topic: "d", payload: Array(text.utf8), oversized: false, retained: false))
  }

  func describe(_ input: FleetInput?) -> String {
    switch input {
    case .message(let m)?: String(decoding: m.payload, as: UTF8.self)
    case .tripEnded?: "tripEnded"
    case .beaconsChanged?: "beaconsChanged"
    case .reportDue?: "reportDue"
    case nil: "nil"
    }
  }

  @Test func documentsAndTripEndsSurviveAFloodOfNews() async {
    let inbox = FleetInbox()
    for i in 0..<1000 {
      inbox.yield(.beaconsChanged)
      if i == 300 { inbox.yield(message("v2")) }
      if i == 600 { inbox.yield(.tripEnded) }
      if i == 900 { inbox.yield(message("v3")) }
    }
    inbox.yield(.reportDue)
    #expect(inbox.queued == 3)
    #expect(inbox.folded == 999)
    var taken: [String] = []
    for _ in 0..<5 { taken.append(describe(await inbox.next())) }
    // The queue first, in order; then the report that is due; then one look for all the news.
    #expect(taken == ["v2", "tripEnded", "v3", "reportDue", "beaconsChanged"])
    inbox.finish()
    #expect(describe(await inbox.next()) == "nil")
  }

  @Test func aWaitingReaderIsWokenAndACancelledOneReturns() async throws {
    let inbox = FleetInbox()
    let reader = Task { await inbox.next() }
    try await Task.sleep(for: .milliseconds(50))
    inbox.yield(.tripEnded)
    #expect(describe(await reader.value) == "tripEnded")
    let cancelled = Task { await inbox.next() }
    cancelled.cancel()
    #expect(describe(await cancelled.value) == "nil")
  }
}
