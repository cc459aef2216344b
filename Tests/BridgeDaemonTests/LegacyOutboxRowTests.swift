import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

/// Rows another version wrote to the outbox, in a real SQLite file, whose trip ID or device ID
/// breaks its type's rule (`TripID`, `DeviceID`): none is dropped and none stops the daemon. A
/// bad trip ID's batches become dead letters, kept unsent; a bad device ID's trip is held for
/// `trip assign`; each is logged with a sentence that names the field and the fix. The valid rows
/// beside them load and are delivered as before (docs/ARCHITECTURE.md, "Legacy outbox rows").
@Suite struct LegacyOutboxRowTests {
  /// The rows, written with Python's sqlite3 into a store the current schema made: a trip whose
  /// ID has a CR/LF (two batches, one due, one held), a trip whose stored device ID has a control
  /// character (two queued batches), a good trip (one due batch), and a dead letter an earlier
  /// version kept for a trip ID with a space.
  static let rows = #"""
    import json, sqlite3, sys
    c = sqlite3.connect(sys.argv[1])
    ev = json.dumps([{"type": "braking", "at": 1}], separators=(",", ":"))
    def trip(t, device, states):
        c.execute("INSERT INTO trips (trip_id, started_at, resolution, beacon_mode, next_sequence) VALUES (?, 1.0, ?, 0, ?)",
                  (t, json.dumps({"reason": "assigned", "deviceId": device}), len(states)))
        for s, state in enumerate(states):
            c.execute("INSERT INTO queue (trip_id, sequence, events, received_at, state) VALUES (?, ?, ?, 1.0, ?)",
                      (t, s, ev, state))
    trip("t\r\nforged", "UNIT-1", [2, 0])
    trip("held-1", "UNIT\u0001", [2, 1])
    trip("ok-1", "UNIT-1", [2])
    c.execute("INSERT INTO dead_letters (trip_id, sequence, events, resolution, reason, failed_at) VALUES (?, 0, ?, ?, ?, 1.0)",
              ("trip 1", ev, json.dumps({"reason": "assigned", "deviceId": "UNIT-1"}), "not sent: an earlier version's reason"))
    c.commit()
    c.close()
    """#

  func storeWithLegacyRows(_ name: String) async throws -> String {
    let dir = try scratchDirectory(name)
    do { _ = try Store(directory: dir) }
    let run = try await runProcess("/usr/bin/python3", ["-c", Self.rows, dir + "/" + Store.fileName])
    #expect(run.status == 0, "python: \(run.stderr)")
    return dir
  }

  func warnings(_ host: RecordingHost) -> [String] {
    host.logs.filter { $0.level == .warning }.map(\.message)
  }

  @Test func aBadTripIDIsKeptAsDeadLettersAndTheRestLoads() async throws {
    let dir = try await storeWithLegacyRows("legacy-trip")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    let host = RecordingHost(beaconMode: false)
    let bridge = BeaconBridge(host: host, journal: store)
    try await bridge.start()

    // The good trip loaded and its batch went out, tagged as stored.
    #expect(host.posted.map(\.idempotencyKey) == ["ok-1#0"])
    #expect(host.posted.first?.deviceId == "UNIT-1")
    // The bad trip ID's two batches are dead letters with the reason; nothing of it was posted.
    let letters = try await store.deadLetters()
    let forged = letters.filter { $0.tripText == "t\r\nforged" }
    #expect(forged.map(\.sequence) == [0, 1])
    for letter in forged {
      #expect(letter.batch == nil)
      #expect(
        letter.reason.hasPrefix("not sent: no Idempotency-Key can be made from it: trip ID "), "\(letter)")
    }
    // The earlier version's letter is listed, with why it cannot be sent.
    let old = try #require(letters.first { $0.tripText == "trip 1" })
    #expect(old.batch == nil && old.reason == "not sent: an earlier version's reason")
    #expect(old.unsendable?.hasPrefix("trip ID \"trip 1\" contains U+0020; a trip ID is 1 to 128") == true)
    // One warning names the trip (escaped: one line), the field and what to do.
    let line = try #require(warnings(host).first { $0.contains("forged") })
    #expect(!line.contains("\r") && !line.contains("\n"))
    #expect(line.contains("trip ID \"t\\r\\nforged\""))
    #expect(line.contains("2 undelivered batch(es)") && line.contains("beaconbridge diagnose"))
    // Counted where an operator looks: the trip's row is kept, its batches are dead letters.
    let summary = try await store.outboxSummary()
    #expect(summary.deadLetters == 3)
    #expect(summary.trips == 3)

    // `trip retry` cannot send them: each is reported with its sentence and kept.
    let retried = try await store.retryDeadLetters(tripId: nil) { batch in
      Issue.record("posted \(batch.idempotencyKey)")
    }
    #expect(retried.delivered == 0 && retried.failed.count == 3)
    #expect(retried.failed.allSatisfy { $0.reason.hasPrefix("not sent: ") })
    #expect(try await store.deadLetters().count == 3)

    // A restart reads the same file again: nothing more moves, nothing is lost, nothing crashes.
    let again = RecordingHost(beaconMode: false)
    let restarted = BeaconBridge(host: again, journal: try Store(directory: dir))
    try await restarted.start()
    #expect(again.posted.isEmpty)
    #expect(warnings(again).contains { $0.contains("forged") && $0.contains("0 undelivered batch(es)") })
    #expect(try await store.deadLetters().count == 3)
  }

  @Test func aBadDeviceIDHoldsItsTripUntilAssigned() async throws {
    let dir = try await storeWithLegacyRows("legacy-device")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    let host = RecordingHost(beaconMode: false)
    let bridge = BeaconBridge(host: host, journal: store)
    try await bridge.start()

    // Nothing is posted with the bad device ID: the trip is held, both batches with it.
    #expect(!host.posted.contains { $0.tripId == "held-1" })
    let trip = try #require(await bridge.status.trips.first { $0.tripId == "held-1" })
    #expect(trip.resolution == .unresolved && trip.heldBatches == 2)
    let line = try #require(warnings(host).first { $0.contains("held-1") })
    #expect(line.contains("device ID \"UNIT\\u{1}\""))
    #expect(line.contains("beaconbridge trip assign --trip-id held-1 --device-id ID"))

    // `trip assign` tags it; both batches go out in order, with the new device ID.
    try await bridge.assign("held-1", deviceId: "UNIT-2")
    let sent = host.posted.filter { $0.tripId == "held-1" }
    #expect(sent.map(\.sequence) == [0, 1])
    #expect(sent.allSatisfy { $0.deviceId == "UNIT-2" })
    #expect(try await store.outboxSummary().undelivered == 0)
  }
}
