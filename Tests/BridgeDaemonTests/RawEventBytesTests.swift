import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

/// Trip events reach the backend byte for byte: the upload body carries each event's
/// text as received, and the SQLite outbox keeps that text across a restart.
@Suite struct RawEventBytesTests {
  static let texts = [
    #"{"type":"braking","big":18446744073709551615,"huge":1e400,"negZero":-0,"trail":1.10}"#,
    #"{ "type" : "x\u00e9\/\ud83d\ude00" ,"s":"tab\tq\"\u0000", "n":[1.0E+2, -0.0e-0], "deep":{"z":0.1e1}}"#,
  ]

  func tagged(_ events: [TripEvent]) -> TaggedTripBatch {
    TaggedTripBatch(
      batch: TripEventBatch(tripId: "t1", sequence: 0, events: events, receivedAt: .zero), deviceId: "UNIT-1",
      resolution: .fallback(deviceId: "UNIT-1"))
  }

  /// Python's `json` module, an independent reader, as the oracle that the body is JSON and that
  /// its events are the events sent.
  func pythonEvents(_ body: String) async throws -> String {
    let script = """
      import json, sys
      body = json.loads(sys.stdin.read())
      sys.stdout.write(json.dumps(body["events"], sort_keys=True))
      """
    let run = try await runProcess("/usr/bin/python3", ["-c", script], stdin: body)
    #expect(run.status == 0, "\(run.stderr)")
    return run.stdout
  }

  @Test func theUploadBodyCarriesEachEventAsItCame() async throws {
    let input = "[" + Self.texts.joined(separator: ",\n  ") + "]"
    let events = try TripEvent.batch(fromJSON: Array(input.utf8))
    let body = String(decoding: try UploadPayload(tagged(events)).httpBody, as: UTF8.self)
    #expect(body.contains(#""events":["# + Self.texts.joined(separator: ",") + "]"), "\(body)")
    let oracle = try await runProcess(
      "/usr/bin/python3",
      ["-c", "import json,sys; sys.stdout.write(json.dumps(json.loads(sys.stdin.read()), sort_keys=True))"],
      stdin: input)
    #expect(try await pythonEvents(body) == oracle.stdout)
    #expect(!body.contains("1.8446744073709552e+19"))
  }

  @Test func theOutboxKeepsTheTextAcrossARestart() async throws {
    let dir = scratchPath("raw-events")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let events = try TripEvent.batch(fromJSON: Array(("[" + Self.texts.joined(separator: ",") + "]").utf8))
    do {
      let store = try Store(directory: dir)
      try await store.recordTripStarted("t1")
      try await store.recordBatch(tagged(events).batch)
    }
    let reopened = try Store(directory: dir)
    let kept = try await reopened.load()
    let restored = try #require(kept.first?.batches.first?.events)
    #expect(restored.map(\.text) == Self.texts)
    #expect(
      String(decoding: try UploadPayload(tagged(restored)).httpBody, as: UTF8.self)
        == String(decoding: try UploadPayload(tagged(events)).httpBody, as: UTF8.self))
  }
}
