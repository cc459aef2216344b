import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import GZone
import Synchronization
import Testing

/// The store reads the wall clock through the one it is given (`Store.wallClock`): every time it
/// writes, and the outbox's oldest age, come from it.
@Suite struct StoreClockTests {
  /// A wall clock the test sets.
  final class SetClock: Sendable {
    let seconds: Mutex<Double>
    init(_ seconds: Double) { self.seconds = Mutex(seconds) }
    func set(_ value: Double) { seconds.withLock { $0 = value } }
    var read: @Sendable () -> Double { { self.seconds.withLock { $0 } } }
  }

  /// Far from today, with a fraction, so that a row stamped by the system's clock cannot match.
  static let first = 1_000_000_000.25
  static let second = 1_100_000_000.75

  @Test func aStoreGivenAFixedClockWritesThatTime() async throws {
    let dir = scratchPath("store-clock")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let clock = SetClock(Self.first)
    let store = try Store(directory: dir, wallClock: clock.read)

    // Every table the daemon writes a time into, outside the fleet's.
    try await store.pair(Fixtures.vanPairing)
    _ = try await store.pairByKey(
      scheme: .rpa, key: Self.digits("00112233445566778899aabbccddeeff"), rotationExponent: nil,
      clockOffset: nil, deviceId: DeviceID("LOCAL-R"), label: nil)
    try await store.recordTripStarted("t1")
    try await store.recordResolution("t1", .configured(deviceId: "SERIAL-1"), beaconMode: false)
    for sequence in 0..<2 {
      try await store.recordBatch(
        TripEventBatch(tripId: "t1", sequence: sequence, events: [], receivedAt: .zero))
    }
    try await store.recordDeadLetter("t1", sequence: 0, reason: "HTTP 400")
    try await store.updateDeadLetter(tripId: "t1", sequence: 0, reason: "HTTP 400 again")
    try await store.recordTripEnded("t1")
    try await store.saveGZoneLoad(
      try GZoneLoad(
        experienceLevels: .array([]), player: .object(["experience": .int(0)]), availableGames: .array([]),
        gameRounds: .array([])))
    try await store.setFleetOwnsPairings(true)
    #expect(
      try times(dir) == [
        "dead_letters.failed_at": [Self.first], "decisions.decided_at": [Self.first],
        "fleet_link.since": [Self.first], "gzone_last_load.loaded_at": [Self.first],
        "key_pairings.created_at": [Self.first], "pairings.created_at": [Self.first],
        "queue.received_at": [Self.first], "trips.ended_at": [Self.first], "trips.started_at": [Self.first],
      ])
    // The age of the oldest batch waiting is the given clock's, too.
    clock.set(Self.first + 42)
    #expect(try await store.outboxSummary().oldestAge == 42)

    // The fleet's document, written at the clock's second reading; the box's seconds a new EID
    // key's clock is counted from are the same clock's.
    clock.set(Self.second)
    let vector = try OracleVectors.firstEID()
    let document = try FleetDocument.parse(
      Array(
        #"{"version":3,"pairings":[{"uuid":"E2C56DB5-DFFB-48D2-B060-D0F5A71096E0","major":1,"minor":7,"deviceId":"VAN-7"},{"eid":{"identityKey":"\#(vector.identityKey)","rotationExponent":\#(vector.rotationExponent),"beaconClock":\#(vector.beaconClock)},"deviceId":"UNIT-E1"}],"settings":{}}"#
          .utf8)
    ).get()
    try await store.applyFleet(document)
    let applied = try times(dir)
    for column in ["pairings.created_at", "key_pairings.created_at", "fleet_applied.applied_at"] {
      #expect(applied[column] == [Self.second], "\(column)")
    }
    let eid = try #require(try await store.keyPairings().first { $0.pairing.deviceId == "UNIT-E1" })
    #expect(eid.clockOffset == Int64(vector.beaconClock) - Int64(Self.second.rounded(.down)))
    // Set aside (which takes the fleet's pairings out of the store) at a third reading.
    clock.set(Self.second + 1)
    #expect(try await store.setFleetAside() == 3)
    #expect(try times(dir)["fleet_set_aside.since"] == [Self.second + 1])
  }

  /// Every time column of the store's file (a name ending in `_at`, or `since`): its distinct
  /// values by `table.column`, read by Python's sqlite3, not through the store.
  func times(_ dir: String) throws -> [String: [Double]] {
    let python = Process()
    python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    python.arguments = [
      "-c",
      """
      import json, sqlite3, sys
      c = sqlite3.connect(sys.argv[1])
      out = {}
      for (table,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
          for column in [row[1] for row in c.execute(f"PRAGMA table_info({table})")]:
              if column.endswith("_at") or column == "since":
                  values = sorted({v for (v,) in c.execute(f"SELECT {column} FROM {table}") if v is not None})
                  if values:
                      out[f"{table}.{column}"] = values
      print(json.dumps(out))
      """,
      (dir as NSString).appendingPathComponent(Store.fileName),
    ]
    let output = Pipe()
    python.standardOutput = output
    try python.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    python.waitUntilExit()
    #expect(python.terminationStatus == 0)
    return try JSONDecoder().decode([String: [Double]].self, from: data)
  }

  /// A key as `pair --key` takes it: its hex digits.
  static func digits(_ hex: String) -> [UInt8] { Array(hex.lowercased().utf8) }
}
