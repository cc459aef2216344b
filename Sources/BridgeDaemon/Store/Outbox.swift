import BeaconCore
import FoundationEssentials

/// The outbox is full: the batch was refused, and nothing older was dropped.
public struct OutboxFull: Error, Hashable, Sendable, CustomStringConvertible {
  public var limit: Int
  public var description: String {
    "the outbox is full (\(limit) undelivered batches); nothing was dropped. Check the upload with 'beaconbridge doctor'"
  }
}

/// What the outbox holds, for `status` and `doctor`.
public struct OutboxSummary: Hashable, Sendable {
  public var trips: Int
  public var undelivered: Int
  public var unresolvedTrips: Int
  public var deadLetters: Int
  public var limit: Int
  /// Age of the oldest undelivered batch, in seconds.
  public var oldestAge: Double?

  public init(
    trips: Int, undelivered: Int, unresolvedTrips: Int, deadLetters: Int, limit: Int, oldestAge: Double?
  ) {
    self.trips = trips
    self.undelivered = undelivered
    self.unresolvedTrips = unresolvedTrips
    self.deadLetters = deadLetters
    self.limit = limit
    self.oldestAge = oldestAge
  }
}

/// The store is the daemon's trip journal: the outbox. Every batch is committed (WAL,
/// `synchronous=FULL`) before `recordBatch` returns, so the call that handed it over returns only
/// once it would survive a power cut.
extension Store: TripJournal {
  public func load() async throws -> [JournaledTrip] {
    do {
      let trips = try database.query(
        "SELECT trip_id, resolution, beacon_mode, ended_at, next_sequence FROM trips ORDER BY started_at, trip_id"
      )
      return try trips.map { row throws(SQLiteError) -> JournaledTrip in
        let tripId = row[0].text ?? ""
        let resolution =
          row[1].text.flatMap { try? JSONValue.parse(Data($0.utf8)) }
          .flatMap { TripResolution(journalJSON: $0, now: .zero, lateWindow: 0) } ?? .pending(deadline: .zero)
        let batches = try database.query(
          "SELECT sequence, events FROM batches WHERE trip_id = ? ORDER BY sequence", [.text(tripId)]
        ).compactMap { b -> TripEventBatch? in
          guard let sequence = b[0].integer, let text = b[1].text,
            let array = try? JSONText.elements(ofArray: Array(text.utf8))
          else { return nil }
          // Each event with its text as received, so that it leaves byte for byte.
          let events = array.compactMap { try? TripEvent(json: $0.value, text: $0.text) }
          return TripEventBatch(tripId: tripId, sequence: Int(sequence), events: events, receivedAt: .zero)
        }
        return JournaledTrip(
          tripId: tripId, resolution: resolution, beaconMode: (row[2].integer ?? 1) != 0,
          ended: row[3] != .null,
          batches: batches, nextSequence: Int(row[4].integer ?? 0))
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  public func recordTripStarted(_ tripId: String) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        "INSERT OR IGNORE INTO trips (trip_id, started_at) VALUES (?, ?)",
        [.text(tripId), .real(Self.wallClock)])
    }
  }

  public func recordBatch(_ batch: TripEventBatch) async throws {
    let count = try read { () throws(SQLiteError) -> Int64 in
      try database.query("SELECT count(*) FROM batches").first?.first?.integer ?? 0
    }
    guard count < outboxLimit else { throw OutboxFull(limit: outboxLimit) }
    let events = JSONValue.array(batch.events.map(\.json)).compactText
    try write { () throws(SQLiteError) in
      try database.query(
        "INSERT INTO batches (trip_id, sequence, events, received_at) VALUES (?, ?, ?, ?)",
        [.text(batch.tripId), .integer(Int64(batch.sequence)), .text(events), .real(Self.wallClock)])
      try database.query(
        "UPDATE trips SET next_sequence = max(next_sequence, ?) WHERE trip_id = ?",
        [.integer(Int64(batch.sequence + 1)), .text(batch.tripId)])
    }
  }

  public func recordResolution(_ tripId: String, _ resolution: TripResolution, beaconMode: Bool) async throws
  {
    try write { () throws(SQLiteError) in
      try database.query(
        "UPDATE trips SET resolution = ?, beacon_mode = ? WHERE trip_id = ?",
        [.text(resolution.journalJSON.compactText), .integer(beaconMode ? 1 : 0), .text(tripId)])
      // The tagging decisions support sees (the last 200).
      try database.query(
        "INSERT INTO decisions (trip_id, resolution, decided_at) VALUES (?, ?, ?)",
        [.text(tripId), .text(resolution.journalJSON.compactText), .real(Self.wallClock)])
      try database.query("DELETE FROM decisions WHERE id <= (SELECT max(id) FROM decisions) - 200")
    }
  }

  /// The last tagging decisions, newest first: trip, device ID, snapshot, and why.
  public func recentDecisions(limit: Int = 50) throws(StoreError) -> [JSONValue] {
    do {
      return try database.query(
        "SELECT trip_id, resolution, decided_at FROM decisions ORDER BY id DESC LIMIT ?",
        [.integer(Int64(limit))]
      ).compactMap { row in
        guard let trip = row[0].text, let text = row[1].text, let json = try? JSONValue.parse(Data(text.utf8))
        else {
          return nil
        }
        var fields = json.objectValue ?? [:]
        fields["tripId"] = .string(trip)
        if case .real(let t) = row[2] { fields["decidedAt"] = .double(t) }
        return .object(fields)
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  public func recordDelivered(_ tripId: String, sequence: Int) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        "DELETE FROM batches WHERE trip_id = ? AND sequence = ?", [.text(tripId), .integer(Int64(sequence))])
    }
  }

  public func recordDeadLetter(_ tripId: String, sequence: Int, reason: String) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        """
        INSERT OR REPLACE INTO dead_letters (trip_id, sequence, events, resolution, reason, failed_at)
        SELECT b.trip_id, b.sequence, b.events, t.resolution, ?, ? FROM batches b
        LEFT JOIN trips t ON t.trip_id = b.trip_id WHERE b.trip_id = ? AND b.sequence = ?
        """, [.text(reason), .real(Self.wallClock), .text(tripId), .integer(Int64(sequence))])
      try database.query(
        "DELETE FROM batches WHERE trip_id = ? AND sequence = ?", [.text(tripId), .integer(Int64(sequence))])
    }
  }

  public func recordTripEnded(_ tripId: String) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        "UPDATE trips SET ended_at = ? WHERE trip_id = ? AND ended_at IS NULL",
        [.real(Self.wallClock), .text(tripId)])
    }
  }

  public func recordRetired(_ tripId: String) async throws {
    try write { () throws(SQLiteError) in
      // A trip with dead letters keeps no row here: the dead letters carry their own trip ID.
      try database.query("DELETE FROM batches WHERE trip_id = ?", [.text(tripId)])
      try database.query("DELETE FROM trips WHERE trip_id = ?", [.text(tripId)])
    }
  }

  /// Counts for `status` and `doctor`.
  public func outboxSummary() throws(StoreError) -> OutboxSummary {
    do {
      let trips = try database.query("SELECT count(*) FROM trips").first?.first?.integer ?? 0
      let undelivered = try database.query("SELECT count(*), min(received_at) FROM batches").first
      let unresolved =
        try database.query(
          "SELECT count(*) FROM trips WHERE resolution LIKE '{\"reason\":\"unresolved\"%'"
        ).first?.first?.integer ?? 0
      let dead = try database.query("SELECT count(*) FROM dead_letters").first?.first?.integer ?? 0
      var oldest: Double?
      if case .real(let t)? = undelivered?[1] { oldest = max(0, Self.wallClock - t) }
      return OutboxSummary(
        trips: Int(trips), undelivered: Int(undelivered?[0].integer ?? 0), unresolvedTrips: Int(unresolved),
        deadLetters: Int(dead), limit: outboxLimit, oldestAge: oldest)
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Dead letters (of one trip, or all), rebuilt as the tagged batches they were.
  public func deadLetters(tripId: String? = nil) throws(StoreError) -> [(
    batch: TaggedTripBatch, reason: String
  )] {
    do {
      let rows = try database.query(
        "SELECT trip_id, sequence, events, resolution, reason FROM dead_letters WHERE ? IS NULL OR trip_id = ? ORDER BY trip_id, sequence",
        [SQLiteValue(tripId), SQLiteValue(tripId)])
      return rows.compactMap { row in
        guard let trip = row[0].text, let sequence = row[1].integer, let text = row[2].text,
          let events = try? JSONText.elements(ofArray: Array(text.utf8)),
          let resolutionText = row[3].text, let json = try? JSONValue.parse(Data(resolutionText.utf8)),
          let resolution = TripResolution(journalJSON: json, now: .zero, lateWindow: 0),
          let deviceId = resolution.deviceId
        else { return nil }
        let batch = TripEventBatch(
          tripId: trip, sequence: Int(sequence),
          events: events.compactMap { try? TripEvent(json: $0.value, text: $0.text) },
          receivedAt: .zero)
        return (TaggedTripBatch(batch: batch, deviceId: deviceId, resolution: resolution), row[4].text ?? "")
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  public func deleteDeadLetter(tripId: String, sequence: Int) throws(StoreError) {
    try write { () throws(SQLiteError) in
      try database.query(
        "DELETE FROM dead_letters WHERE trip_id = ? AND sequence = ?",
        [.text(tripId), .integer(Int64(sequence))])
    }
  }

  public func updateDeadLetter(tripId: String, sequence: Int, reason: String) throws(StoreError) {
    try write { () throws(SQLiteError) in
      try database.query(
        "UPDATE dead_letters SET reason = ?, failed_at = ? WHERE trip_id = ? AND sequence = ?",
        [.text(reason), .real(Self.wallClock), .text(tripId), .integer(Int64(sequence))])
    }
  }

  /// Sends dead letters (of one trip, or all) through `post` again, in order (`trip retry`): a
  /// delivery deletes the letter, a failure keeps it with the new reason.
  public func retryDeadLetters(
    tripId: String?, post: @Sendable (TaggedTripBatch) async throws -> Void
  ) async throws(StoreError) -> DeadLetterRetry {
    var result = DeadLetterRetry()
    for (batch, _) in try deadLetters(tripId: tripId) {
      do {
        try await post(batch)
        try deleteDeadLetter(tripId: batch.tripId, sequence: batch.sequence)
        result.delivered += 1
      } catch {
        try? updateDeadLetter(tripId: batch.tripId, sequence: batch.sequence, reason: "\(error)")
        result.failed.append((batch.idempotencyKey, "\(error)"))
      }
    }
    return result
  }

  static var wallClock: Double { Date().timeIntervalSince1970 }

  private func write(_ body: () throws(SQLiteError) -> Void) throws(StoreError) {
    do { try database.transaction(body) } catch { throw StoreError(error, path: path) }
  }

  private func read<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
    do { return try body() } catch { throw StoreError(error, path: path) }
  }
}

/// What `Store.retryDeadLetters` did.
public struct DeadLetterRetry: Sendable {
  public var delivered = 0
  /// Each batch still refused: its idempotency key and why.
  public var failed: [(key: String, reason: String)] = []

  /// `{"delivered": n, "failed": [{"key", "reason"}]}`, as `TripRetry` answers.
  public var json: JSONValue {
    .object([
      "delivered": .int(Int64(delivered)),
      "failed": .array(failed.map(OutboxSummary.deadLetterJSON)),
    ])
  }
}
