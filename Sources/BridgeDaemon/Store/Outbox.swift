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
///
/// The outbox is the `queue` table, and it is also the bridge's outbound queue (`QueueJournal`):
/// a batch is a row from `TripEvents` to its delivery, its `state` saying where it is (held for
/// a device ID, waiting for its trip's end, due). The bridge reads due rows a window at a time
/// through the partial index `queue_due`, in `id` order (the order batches were taken), and one
/// batch's events at a time; nothing loads the queue, and no step scans it.
extension Store: QueueJournal {
  /// `queue.state`.
  enum QueueState: Int64 {
    case held = 0
    case waiting = 1
    case due = 2
  }

  /// The queue (schema version 7): the outbox's `batches` table with an order and a state. Rows
  /// of an older store come over held; the first start tags and queues them again.
  static let queueSchema = """
    CREATE TABLE IF NOT EXISTS queue (
      id INTEGER PRIMARY KEY,
      trip_id TEXT NOT NULL REFERENCES trips(trip_id),
      sequence INTEGER NOT NULL,
      events TEXT NOT NULL,
      received_at REAL NOT NULL,
      state INTEGER NOT NULL DEFAULT 0,
      UNIQUE (trip_id, sequence)
    );
    CREATE INDEX IF NOT EXISTS queue_trip_state ON queue (trip_id, state);
    CREATE INDEX IF NOT EXISTS queue_due ON queue (id) WHERE state = 2;
    INSERT INTO queue (trip_id, sequence, events, received_at)
      SELECT trip_id, sequence, events, received_at FROM batches ORDER BY received_at, trip_id, sequence;
    DROP TABLE batches;

    """

  /// The trips the last run left, oldest first. A row whose trip ID or device ID breaks its
  /// type's rule (`TripID`, `DeviceID`) is never dropped and never stops the load: a store
  /// written by another version may hold one. It is set aside (`setAside`, `hold`), with a
  /// sentence in `loadNotices` that the bridge logs.
  public func load() async throws -> [JournaledTrip] {
    notices = []
    do {
      let trips = try database.query(
        "SELECT trip_id, resolution, beacon_mode, ended_at, next_sequence FROM trips ORDER BY started_at, trip_id"
      )
      var kept: [JournaledTrip] = []
      for row in trips {
        let text = row[0].text ?? ""
        let tripId: TripID
        do { tripId = try TripID(text) } catch {
          try setAside(tripText: text, because: error)
          continue
        }
        var resolution = TripResolution.pending(deadline: .zero)
        var held = false
        if let stored = row[1].text.flatMap({ try? JSONValue.parse(Data($0.utf8)) }) {
          do {
            resolution = try TripResolution(journalJSON: stored, now: .zero, lateWindow: 0) ?? resolution
          } catch {
            try hold(tripId, because: error)
            resolution = .unresolved
            held = true
          }
        }
        // Only the batches held for a device ID are read; the queued ones are counted (index only).
        let batches = try database.query(
          "SELECT sequence, events FROM queue WHERE trip_id = ? AND state = 0 ORDER BY id",
          [.text(tripId.rawValue)]
        ).compactMap { b -> TripEventBatch? in
          guard let sequence = b[0].integer, let text = b[1].text else { return nil }
          return Self.batch(tripId: tripId, sequence: Int(sequence), events: text)
        }
        var queued = 0
        var waiting = 0
        for count in try database.query(
          "SELECT state, count(*) FROM queue WHERE trip_id = ? AND state > 0 GROUP BY state",
          [.text(tripId.rawValue)])
        where !held {
          let n = Int(count[1].integer ?? 0)
          queued += n
          if count[0].integer == QueueState.waiting.rawValue { waiting += n }
        }
        kept.append(
          JournaledTrip(
            tripId: tripId, resolution: resolution, beaconMode: (row[2].integer ?? 1) != 0,
            ended: row[3] != .null,
            batches: batches, nextSequence: Int(row[4].integer ?? 0), queued: queued, waiting: waiting))
      }
      return kept
    } catch {
      throw StoreError(error, path: path)
    }
  }

  public func loadNotices() async -> [String] { notices }

  /// A trip whose stored ID breaks `TripID`'s rule (a CR or LF, a space, an empty ID): no upload
  /// can carry it (it is the `Idempotency-Key`) and no door can name it, so the bridge cannot
  /// take it. Its undelivered batches move to the dead letters with the reason, its row stays,
  /// and `loadNotices` says so: `status` and `doctor` count the letters, `diagnose` exports them,
  /// and `trip retry` reports them as not sendable.
  private func setAside(tripText: String, because error: IdentifierError) throws(SQLiteError) {
    let reason = Self.unsendable(error)
    var moved = 0
    try database.transaction { () throws(SQLiteError) in
      try database.query(
        """
        INSERT OR REPLACE INTO dead_letters (trip_id, sequence, events, resolution, reason, failed_at)
        SELECT b.trip_id, b.sequence, b.events, t.resolution, ?, ? FROM queue b
        LEFT JOIN trips t ON t.trip_id = b.trip_id WHERE b.trip_id = ? ORDER BY b.id
        """, [.text(reason), .real(wallClock()), .text(tripText)])
      try database.query("DELETE FROM queue WHERE trip_id = ?", [.text(tripText)])
      moved = database.changes
    }
    dequeued(moved)
    notices.append(
      "the outbox's trip \(tripText.quotedForMessage) is not loaded: \(error); \(moved) undelivered batch(es) of it moved to the dead letters, kept unsent; export them with 'beaconbridge diagnose'"
    )
  }

  /// A trip whose stored device ID breaks `DeviceID`'s rule: its trip ID is good, so it is loaded
  /// unresolved, its queued batches held again, until `trip assign` gives it a device ID. Nothing
  /// is posted with the bad ID, and nothing of the trip is dropped.
  private func hold(_ tripId: TripID, because error: IdentifierError) throws(SQLiteError) {
    try database.query(
      "UPDATE queue SET state = ? WHERE trip_id = ? AND state > 0",
      [.integer(QueueState.held.rawValue), .text(tripId.rawValue)])
    notices.append(
      "the outbox's trip \(tripId) is held: its stored \(error); tag it with 'beaconbridge trip assign --trip-id \(tripId) --device-id ID'"
    )
  }

  /// The dead letter's reason for a batch whose trip ID no upload can carry.
  static func unsendable(_ error: IdentifierError) -> String {
    "not sent: no Idempotency-Key can be made from it: \(error)"
  }

  /// A batch as the queue keeps it: each event with its text as received, so that it leaves
  /// byte for byte.
  static func batch(tripId: TripID, sequence: Int, events text: String) -> TripEventBatch? {
    guard let array = try? JSONText.elements(ofArray: Array(text.utf8)) else { return nil }
    let events = array.compactMap { try? TripEvent(json: $0.value, text: $0.text) }
    return TripEventBatch(tripId: tripId, sequence: sequence, events: events, receivedAt: .zero)
  }

  public func recordTripStarted(_ tripId: TripID) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        "INSERT OR IGNORE INTO trips (trip_id, started_at) VALUES (?, ?)",
        [.text(tripId.rawValue), .real(wallClock())])
    }
  }

  /// Rows in the queue: counted once (an index's length), then kept in step.
  func undeliveredCount() throws(StoreError) -> Int {
    if let queueCount { return queueCount }
    let count = try read { () throws(SQLiteError) -> Int64 in
      try database.query("SELECT count(*) FROM queue").first?.first?.integer ?? 0
    }
    queueCount = Int(count)
    return Int(count)
  }

  public func recordBatch(_ batch: TripEventBatch) async throws {
    let count = try undeliveredCount()
    guard count < outboxLimit else { throw OutboxFull(limit: outboxLimit) }
    let events = JSONValue.array(batch.events.map(\.json)).compactText
    try write { () throws(SQLiteError) in
      try database.query(
        "INSERT INTO queue (trip_id, sequence, events, received_at) VALUES (?, ?, ?, ?)",
        [.text(batch.tripId.rawValue), .integer(Int64(batch.sequence)), .text(events), .real(wallClock())])
      try database.query(
        "UPDATE trips SET next_sequence = max(next_sequence, ?) WHERE trip_id = ?",
        [.integer(Int64(batch.sequence + 1)), .text(batch.tripId.rawValue)])
    }
    queueCount = count + 1
  }

  public func recordQueued(_ batches: [QueuedBatchKey], due: Bool) async throws {
    let state = (due ? QueueState.due : .waiting).rawValue
    try write { () throws(SQLiteError) in
      for key in batches {
        try database.query(
          "UPDATE queue SET state = ? WHERE trip_id = ? AND sequence = ?",
          [.integer(state), .text(key.tripId.rawValue), .integer(Int64(key.sequence))])
      }
    }
  }

  public func recordDue(_ tripId: TripID) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        "UPDATE queue SET state = 2 WHERE trip_id = ? AND state = 1", [.text(tripId.rawValue)])
    }
  }

  public func dueWindow(limit: Int) async throws -> [QueuedBatchKey] {
    try read { () throws(SQLiteError) in
      try database.query(
        "SELECT trip_id, sequence FROM queue WHERE state = 2 ORDER BY id LIMIT ?", [.integer(Int64(limit))]
      ).compactMap { row in
        // A due row's trip was loaded, so its ID reads (`load` sets the others aside).
        guard let text = row[0].text, let trip = try? TripID(text), let sequence = row[1].integer else {
          return nil
        }
        return QueuedBatchKey(tripId: trip, sequence: Int(sequence))
      }
    }
  }

  public func queuedBatch(_ key: QueuedBatchKey) async throws -> TripEventBatch? {
    try read { () throws(SQLiteError) in
      try database.query(
        "SELECT events FROM queue WHERE trip_id = ? AND sequence = ?",
        [.text(key.tripId.rawValue), .integer(Int64(key.sequence))]
      ).first.flatMap { row in
        row[0].text.flatMap { Self.batch(tripId: key.tripId, sequence: key.sequence, events: $0) }
      }
    }
  }

  public func recordResolution(_ tripId: TripID, _ resolution: TripResolution, beaconMode: Bool) async throws
  {
    try write { () throws(SQLiteError) in
      try database.query(
        "UPDATE trips SET resolution = ?, beacon_mode = ? WHERE trip_id = ?",
        [.text(resolution.journalJSON.compactText), .integer(beaconMode ? 1 : 0), .text(tripId.rawValue)])
      // The tagging decisions support sees (the last 200).
      try database.query(
        "INSERT INTO decisions (trip_id, resolution, decided_at) VALUES (?, ?, ?)",
        [.text(tripId.rawValue), .text(resolution.journalJSON.compactText), .real(wallClock())])
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

  public func recordDelivered(_ tripId: TripID, sequence: Int) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        "DELETE FROM queue WHERE trip_id = ? AND sequence = ?",
        [.text(tripId.rawValue), .integer(Int64(sequence))])
      dequeued(database.changes)
    }
  }

  /// Keeps `queueCount` in step with rows deleted.
  private func dequeued(_ rows: Int) {
    if let count = queueCount { queueCount = max(0, count - rows) }
  }

  public func recordDeadLetter(_ tripId: TripID, sequence: Int, reason: String) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        """
        INSERT OR REPLACE INTO dead_letters (trip_id, sequence, events, resolution, reason, failed_at)
        SELECT b.trip_id, b.sequence, b.events, t.resolution, ?, ? FROM queue b
        LEFT JOIN trips t ON t.trip_id = b.trip_id WHERE b.trip_id = ? AND b.sequence = ?
        """, [.text(reason), .real(wallClock()), .text(tripId.rawValue), .integer(Int64(sequence))])
      try database.query(
        "DELETE FROM queue WHERE trip_id = ? AND sequence = ?",
        [.text(tripId.rawValue), .integer(Int64(sequence))])
      dequeued(database.changes)
    }
  }

  public func recordTripEnded(_ tripId: TripID) async throws {
    try write { () throws(SQLiteError) in
      try database.query(
        "UPDATE trips SET ended_at = ? WHERE trip_id = ? AND ended_at IS NULL",
        [.real(wallClock()), .text(tripId.rawValue)])
    }
  }

  public func recordRetired(_ tripId: TripID) async throws {
    try write { () throws(SQLiteError) in
      // A trip with dead letters keeps no row here: the dead letters carry their own trip ID.
      try database.query("DELETE FROM queue WHERE trip_id = ?", [.text(tripId.rawValue)])
      dequeued(database.changes)
      try database.query("DELETE FROM trips WHERE trip_id = ?", [.text(tripId.rawValue)])
    }
  }

  /// Counts for `status` and `doctor`.
  public func outboxSummary() throws(StoreError) -> OutboxSummary {
    do {
      let trips = try database.query("SELECT count(*) FROM trips").first?.first?.integer ?? 0
      // The count kept in step, and the oldest row by the primary key: no scan of the queue.
      var undelivered = Int64(queueCount ?? 0)
      if queueCount == nil {
        undelivered = try database.query("SELECT count(*) FROM queue").first?.first?.integer ?? 0
        queueCount = Int(undelivered)
      }
      let oldestRow = try database.query("SELECT received_at FROM queue ORDER BY id LIMIT 1").first
      let unresolved =
        try database.query(
          "SELECT count(*) FROM trips WHERE resolution LIKE '{\"reason\":\"unresolved\"%'"
        ).first?.first?.integer ?? 0
      let dead = try database.query("SELECT count(*) FROM dead_letters").first?.first?.integer ?? 0
      var oldest: Double?
      if case .real(let t)? = oldestRow?[0] { oldest = max(0, wallClock() - t) }
      return OutboxSummary(
        trips: Int(trips), undelivered: Int(undelivered), unresolvedTrips: Int(unresolved),
        deadLetters: Int(dead), limit: outboxLimit, oldestAge: oldest)
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Dead letters (of one trip, or all), in order, each rebuilt as the tagged batch it was; one
  /// whose trip ID, device ID or content does not read (a letter written by another version) is
  /// listed all the same, with no batch and the sentence saying why.
  public func deadLetters(tripId: TripID? = nil) throws(StoreError) -> [DeadLetter] {
    do {
      let trip = tripId.map { SQLiteValue.text($0.rawValue) } ?? .null
      let rows = try database.query(
        "SELECT trip_id, sequence, events, resolution, reason FROM dead_letters WHERE ? IS NULL OR trip_id = ? ORDER BY trip_id, sequence",
        [trip, trip])
      return rows.map { row in
        var letter = DeadLetter(
          tripText: row[0].text ?? "", sequence: Int(row[1].integer ?? 0), reason: row[4].text ?? "")
        do throws(IdentifierError) {
          let tripId = try TripID(letter.tripText)
          guard let text = row[2].text, let events = try? JSONText.elements(ofArray: Array(text.utf8)),
            let resolutionText = row[3].text, let json = try? JSONValue.parse(Data(resolutionText.utf8)),
            let resolution = try TripResolution(journalJSON: json, now: .zero, lateWindow: 0),
            let deviceId = resolution.deviceId
          else {
            letter.unsendable = "its events or its trip's device ID do not read"
            return letter
          }
          let batch = TripEventBatch(
            tripId: tripId, sequence: letter.sequence,
            events: events.compactMap { try? TripEvent(json: $0.value, text: $0.text) },
            receivedAt: .zero)
          letter.batch = TaggedTripBatch(batch: batch, deviceId: deviceId, resolution: resolution)
        } catch {
          letter.unsendable = error.description
        }
        return letter
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  public func deleteDeadLetter(tripId: TripID, sequence: Int) throws(StoreError) {
    try write { () throws(SQLiteError) in
      try database.query(
        "DELETE FROM dead_letters WHERE trip_id = ? AND sequence = ?",
        [.text(tripId.rawValue), .integer(Int64(sequence))])
    }
  }

  public func updateDeadLetter(tripId: TripID, sequence: Int, reason: String) throws(StoreError) {
    try write { () throws(SQLiteError) in
      try database.query(
        "UPDATE dead_letters SET reason = ?, failed_at = ? WHERE trip_id = ? AND sequence = ?",
        [.text(reason), .real(wallClock()), .text(tripId.rawValue), .integer(Int64(sequence))])
    }
  }

  /// Sends dead letters (of one trip, or all) through `post` again, in order (`trip retry`): a
  /// delivery deletes the letter, a failure keeps it with the new reason. A letter that cannot be
  /// sent (`DeadLetter.unsendable`) is kept as it is and reported as failed with that sentence.
  public func retryDeadLetters(
    tripId: TripID?, post: @Sendable (TaggedTripBatch) async throws -> Void
  ) async throws(StoreError) -> DeadLetterRetry {
    var result = DeadLetterRetry()
    for letter in try deadLetters(tripId: tripId) {
      guard let batch = letter.batch else {
        result.failed.append((letter.key, "not sent: \(letter.unsendable ?? letter.reason)"))
        continue
      }
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

  private func write(_ body: () throws(SQLiteError) -> Void) throws(StoreError) {
    do { try database.transaction(body) } catch { throw StoreError(error, path: path) }
  }

  private func read<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
    do { return try body() } catch { throw StoreError(error, path: path) }
  }
}

/// A batch the backend refused for good, or that no upload can carry, as the store keeps it.
public struct DeadLetter: Sendable {
  /// The trip ID as stored: a `TripID`'s text unless another version wrote the letter.
  public var tripText: String
  public var sequence: Int
  /// Why it was refused, as recorded.
  public var reason: String
  /// The tagged batch it was; nil when it cannot be rebuilt (`unsendable` says why).
  public var batch: TaggedTripBatch?
  /// Why no upload can carry it: the refusal of its trip ID, device ID or content.
  public var unsendable: String?

  /// `<tripId>#<sequence>` as stored, for lists (the JSON or message it goes into escapes it).
  public var key: String { "\(tripText)#\(sequence)" }
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
