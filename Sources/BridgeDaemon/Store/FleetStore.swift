import BeaconCore
import BeaconCrypto
import FoundationEssentials

/// The fleet's desired document as applied (schema version 4; its digest and its pairings by
/// key, 6): its version and settings, and which pairings it owns. Applied in one transaction
/// with the pairings, so the store holds the old document or the new one, never half.
extension Store {
  static let fleetSchema = """
    CREATE TABLE IF NOT EXISTS fleet_applied (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL,
      settings TEXT NOT NULL,
      applied_at REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fleet_pairings (
      uuid TEXT NOT NULL,
      major INTEGER,
      minor INTEGER
    );
    CREATE TABLE IF NOT EXISTS fleet_link (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      since REAL NOT NULL
    );
    """

  /// The applied document's content digest (`FleetDocument.contentDigest`: a new document with
  /// the applied version is told apart from the same one delivered again), and the pairings by
  /// key the document owns.
  static let fleetKeySchema = """
    ALTER TABLE fleet_applied ADD COLUMN digest TEXT;
    CREATE TABLE IF NOT EXISTS fleet_key_pairings (
      id INTEGER PRIMARY KEY REFERENCES key_pairings(id) ON DELETE CASCADE
    );
    """

  /// The applied document set aside (schema version 7): the daemon started without `[Fleet]`, so the document's
  /// settings and pairings do not apply (docs/fleet.md "Without [Fleet]"). Its row says which
  /// version; the document itself is the broker's, applied again when `[Fleet]` comes back.
  static let fleetAsideSchema = """
    CREATE TABLE IF NOT EXISTS fleet_set_aside (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL,
      since REAL NOT NULL
    );
    """

  /// Sets the applied document aside, in one transaction, as a daemon without `[Fleet]` starts:
  /// its pairings (by identity and by key) leave the store, so that neither the bridge nor the
  /// scan filter uses them and the box can be paired locally; its version and settings stay,
  /// marked set aside, and apply no more. Returns the version set aside (now or before), nil
  /// when no document was applied.
  public func setFleetAside() throws(StoreError) -> Int64? {
    do {
      return try database.transaction { () throws(SQLiteError) -> Int64? in
        if let aside = try database.query("SELECT version FROM fleet_set_aside WHERE id = 1").first?[0]
          .integer
        {
          return aside
        }
        guard
          let version = try database.query("SELECT version FROM fleet_applied WHERE id = 1").first?[0].integer
        else { return nil }
        try database.execute(
          """
          DELETE FROM pairings WHERE EXISTS (SELECT 1 FROM fleet_pairings AS f
            WHERE f.uuid = pairings.uuid AND f.major IS pairings.major AND f.minor IS pairings.minor);
          DELETE FROM key_pairings WHERE id IN (SELECT id FROM fleet_key_pairings);
          DELETE FROM fleet_pairings;
          DELETE FROM fleet_key_pairings;
          """)
        try database.query(
          "INSERT INTO fleet_set_aside (id, version, since) VALUES (1, ?, ?)",
          [.integer(version), .real(wallClock())])
        return version
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// The version of the document set aside, or nil when none is.
  public func fleetSetAside() throws(StoreError) -> Int64? {
    do {
      return try database.query("SELECT version FROM fleet_set_aside WHERE id = 1").first?[0].integer
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// The sentence `pair` (by identity or by key) and `unpair` refuse with while the fleet owns
  /// the pairings.
  public static let fleetOwnsPairings =
    "this box is paired by its fleet: [Fleet] is configured, so the desired document on the broker owns the pairings (docs/fleet.md); change them there, or remove [Fleet] and restart the daemon"

  /// Records whether `[Fleet]` is configured, as the daemon starts: while it is, `pair` (by
  /// identity or by key) and `unpair` refuse, whether they reach the daemon or write the store
  /// themselves.
  public func setFleetOwnsPairings(_ owns: Bool) throws(StoreError) {
    do {
      if owns {
        try database.query(
          "INSERT OR IGNORE INTO fleet_link (id, since) VALUES (1, ?)", [.real(wallClock())])
      } else {
        try database.query("DELETE FROM fleet_link")
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Throws the refusal when the fleet owns the pairings.
  func refuseWhileFleetOwnsPairings() throws(StoreError) {
    let owned: Bool
    do { owned = try !database.query("SELECT 1 FROM fleet_link").isEmpty } catch {
      throw StoreError(error, path: path)
    }
    if owned { throw StoreError(.fleetOwnsPairings, Self.fleetOwnsPairings) }
  }

  /// The applied document's version, settings and content digest; nil before the first. The
  /// digest is nil for a document applied before the store kept it.
  public func fleetApplied() throws(StoreError) -> (
    version: Int64, settings: [FleetSetting], digest: String?
  )? {
    do {
      guard
        let row = try database.query("SELECT version, settings, digest FROM fleet_applied WHERE id = 1")
          .first,
        let version = row[0].integer
      else { return nil }
      // A settings row that no longer reads counts as no settings; the version stands.
      let settings =
        row[1].text.flatMap { try? JSONDecoder().decode([FleetSetting].self, from: Data($0.utf8)) } ?? []
      return (version, settings, row[2].text)
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Whether each pairing came from the fleet's document (else it was paired locally).
  public func fleetOwns(_ pairings: [Pairing]) throws(StoreError) -> [Bool] {
    do {
      let rows = try database.query("SELECT uuid, major, minor FROM fleet_pairings")
      let owned = Set(rows.map { "\($0[0].text ?? "")/\($0[1].integer ?? -1)/\($0[2].integer ?? -1)" })
      let ownedKeys = Set(
        try database.query("SELECT id FROM fleet_key_pairings").compactMap { $0[0].integer })
      return pairings.map {
        if let key = $0.key { return ownedKeys.contains(key.pairing) }
        return owned.contains(
          "\($0.uuid.uuidString)/\($0.major.map(Int64.init) ?? -1)/\($0.minor.map(Int64.init) ?? -1)")
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Every pairing as `pairs --json` shows it, with its `source`: `fleet` (the desired
  /// document's) or `local` (paired on the box).
  public func pairingsWithSource() throws(StoreError) -> [ReportedPairing] {
    let all = try pairings()
    let owned = try fleetOwns(all)
    return zip(all, owned).map { pairing, fleet in ReportedPairing(pairing, source: fleet ? .fleet : .local) }
  }

  /// Replaces every pairing, by identity and by key, with the document's and records its
  /// version, settings and digest, in one transaction. A key already paired (with the same
  /// rotation exponent, for an EID) keeps its row: its pairing number, and the clock offset and
  /// newest window the box tracked, so a new version neither forgets a beacon's clock nor
  /// reopens a replay. A new EID key's `beaconClock` is the beacon's clock at `boxSeconds` (the
  /// moment the box applies the document, as `pair --beacon-clock` is the clock at pairing).
  /// `midway` runs inside the transaction, after every pairing is written (a test's kill point,
  /// or its failure).
  ///
  /// Refused with nothing written when the document's EID pairings with `eidClockTolerance`
  /// (the daemon's, read within this call as a reload sets it:
  /// `coldSearchRefusal(eidClockTolerance:apply:)`) make a cold search longer than
  /// `ColdSearchLimit` allows: a document held for a trip's end was checked against the file as
  /// it was when the document came, and a reload may have raised the tolerance since.
  public func applyFleet(
    _ document: FleetDocument, boxSeconds: Int64? = nil,
    eidClockTolerance: @autoclosure @Sendable () -> Double = BridgeConfiguration().eidClockTolerance,
    midway: @Sendable () throws(SQLiteError) -> Void = {}
  ) throws(StoreError) {
    if let refusal = ColdSearchLimit.refusal(
      eidClockTolerance: eidClockTolerance(), rotationExponents: document.eidRotationExponents)
    {
      throw StoreError(.coldSearch, refusal)
    }
    let now = wallClock()
    let boxSeconds = boxSeconds ?? Int64(now.rounded(.down))
    do {
      let settings = String(decoding: try JSONEncoder().encode(document.settings), as: UTF8.self)
      let digest = document.contentDigest
      try database.transaction { () throws(SQLiteError) in
        try database.execute(
          "DELETE FROM pairings; DELETE FROM fleet_pairings; DELETE FROM fleet_key_pairings; DELETE FROM fleet_set_aside;"
        )
        for pairing in document.pairings {
          let identity: [SQLiteValue] = [
            .text(pairing.uuid.uuidString), SQLiteValue(pairing.major.map(Int.init)),
            SQLiteValue(pairing.minor.map(Int.init)),
          ]
          try database.query(
            "INSERT INTO pairings (uuid, major, minor, device_id, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            identity + [
              .text(pairing.deviceId.rawValue), SQLiteValue(pairing.label), .real(now),
            ])
          try database.query("INSERT INTO fleet_pairings (uuid, major, minor) VALUES (?, ?, ?)", identity)
        }
        for keyed in document.keyPairings { try writeFleetKey(keyed, boxSeconds: boxSeconds) }
        // Every other pairing by key goes: the document owns them all, local ones included.
        try database.execute("DELETE FROM key_pairings WHERE id NOT IN (SELECT id FROM fleet_key_pairings)")
        try midway()
        try database.query(
          "INSERT OR REPLACE INTO fleet_applied (id, version, settings, applied_at, digest) VALUES (1, ?, ?, ?, ?)",
          [.integer(document.version), .text(settings), .real(now), .text(digest)])
      }
    } catch let error as SQLiteError {
      throw StoreError(error, path: path)
    } catch {
      throw StoreError(.io, "the store \(path): \(error)")
    }
  }

  /// One of the document's pairings by key, inside `applyFleet`'s transaction: its row kept and
  /// relabelled when the key is already paired, else a new one; either way marked the fleet's.
  /// The key is bound from a scratch buffer of its hex digits, wiped after.
  private func writeFleetKey(_ keyed: ScenarioKeyPairing, boxSeconds: Int64) throws(SQLiteError) {
    let scheme: KeyedIdentity.Scheme
    let key: ScenarioKeyPairing.Key
    var exponent: SQLiteValue = .null
    var offset: SQLiteValue = .null
    switch keyed.scheme {
    case .eid(let identityKey, let k, let clock):
      (scheme, key) = (.eid, identityKey)
      exponent = .integer(Int64(k))
      offset = .integer(Int64(clock) - boxSeconds)
    case .irk(let irk):
      (scheme, key) = (.rpa, irk)
    }
    let pairing = keyed.pairing
    try SecretBytes.withScratch(count: 32) { (digits) throws(SQLiteError) in
      let alphabet = Array("0123456789abcdef".utf8)
      for (index, byte) in key.bytes.prefix(16).enumerated() {
        digits[2 * index] = alphabet[Int(byte >> 4)]
        digits[2 * index + 1] = alphabet[Int(byte & 0x0F)]
      }
      let secret = UnsafeRawBufferPointer(digits)
      try database.execute(
        """
        UPDATE key_pairings SET device_id = ?, label = ?
        WHERE scheme = ? AND rotation_exponent IS ? AND id NOT IN (SELECT id FROM fleet_key_pairings)
          AND secret = ?
        """,
        [.text(pairing.deviceId.rawValue), SQLiteValue(pairing.label), .text(scheme.rawValue), exponent],
        secret: secret)
      if database.changes > 0 {
        try database.execute(
          """
          INSERT INTO fleet_key_pairings (id) SELECT id FROM key_pairings
          WHERE scheme = ? AND rotation_exponent IS ? AND secret = ? LIMIT 1
          """, [.text(scheme.rawValue), exponent], secret: secret)
      } else {
        try database.execute(
          """
          INSERT INTO key_pairings (scheme, device_id, label, rotation_exponent, clock_offset, heard_window,
            created_at, secret) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)
          """,
          [
            .text(scheme.rawValue), .text(pairing.deviceId.rawValue), SQLiteValue(pairing.label), exponent,
            offset,
            .real(wallClock()),
          ], secret: secret)
        try database.query("INSERT INTO fleet_key_pairings (id) VALUES (last_insert_rowid())")
      }
    }
  }
}
