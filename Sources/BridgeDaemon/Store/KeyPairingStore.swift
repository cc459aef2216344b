import BeaconCore
import BeaconCrypto
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// A pairing by key as the store keeps it, without its key: the key never leaves the store but
/// into a `KeyAuthenticator` (`Store.keyAuthenticator`).
public struct StoredKeyPairing: Hashable, Sendable {
  public var pairing: Pairing
  /// Eddystone-EID only: K, and the offset from the box's clock to the beacon's (beacon clock =
  /// box seconds + offset) and the newest window heard, as last written back.
  public var rotationExponent: UInt8?
  public var clockOffset: Int64?
  public var heardWindow: UInt32?
}

/// The key_pairings table: Eddystone-EID identity keys and IRKs bound to device IDs
/// (docs/authentication.md). The key column is written from the caller's buffer and read in
/// place into an `AES128Key`; the store's files are readable by their owner only
/// (`restrictToOwner`).
extension Store {
  static let keyPairingSchema = """
    CREATE TABLE IF NOT EXISTS key_pairings (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      scheme TEXT NOT NULL CHECK (scheme IN ('eid', 'rpa')),
      device_id TEXT NOT NULL,
      label TEXT,
      rotation_exponent INTEGER,
      clock_offset INTEGER,
      heard_window INTEGER,
      created_at REAL NOT NULL,
      secret TEXT NOT NULL
    );
    """

  /// The store's files (the database, its WAL and its shared memory) readable and writable by
  /// their owner only (the service user): they hold keys. A file this process does not own is
  /// left as it is (chmod fails), and a reader that is not its owner is refused by SQLite.
  static func restrictToOwner(_ path: String) {
    for file in [path, path + "-wal", path + "-shm"] { _ = chmod(file, 0o600) }
  }

  /// The pairings by key, without their keys, in a stable order.
  public func keyPairings() throws(StoreError) -> [StoredKeyPairing] {
    do {
      return try database.query(
        """
        SELECT id, scheme, device_id, label, rotation_exponent, clock_offset, heard_window
        FROM key_pairings ORDER BY device_id, id
        """
      )
      .compactMap(Self.keyPairing)
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// A row read back through the doors' rules; a row another tool wrote that breaks one is
  /// skipped.
  private static func keyPairing(_ row: [SQLiteValue]) -> StoredKeyPairing? {
    guard let id = row[0].integer, let schemeText = row[1].text, let deviceText = row[2].text,
      let device = try? DeviceID(deviceText)
    else { return nil }
    let label = row[3].text.flatMap { (try? PairingLabel.check($0)) != nil ? $0 : nil }
    switch schemeText {
    case "eid":
      guard let k = row[4].integer, (0...15).contains(k), let offset = row[5].integer else { return nil }
      return StoredKeyPairing(
        pairing: Pairing(key: KeyedIdentity(scheme: .eid, pairing: id), deviceId: device, label: label),
        rotationExponent: UInt8(k), clockOffset: offset,
        heardWindow: row[6].integer.flatMap { UInt32(exactly: $0) })
    case "rpa":
      return StoredKeyPairing(
        pairing: Pairing(key: KeyedIdentity(scheme: .rpa, pairing: id), deviceId: device, label: label))
    default:
      return nil
    }
  }

  /// Adds a pairing by key, replacing one with the same scheme and key; committed before it
  /// returns. `key` is the key's 32 hex digits in lower case (`PairingKeyFile.digits`); the caller
  /// wipes them. The error says what is wrong without repeating them. Refused while the fleet
  /// owns the pairings, as `pair` is: the desired document replaces pairings by key too. An EID
  /// pairing is refused when, with the store's others and `eidClockTolerance` (the daemon's, read
  /// within this call, as a reload takes a new one: `coldSearchRefusal(eidClockTolerance:apply:)`),
  /// a cold search would take longer than `ColdSearchLimit` allows.
  public func pairByKey(
    scheme: KeyedIdentity.Scheme, key: [UInt8], rotationExponent: UInt8?, clockOffset: Int64?,
    deviceId: DeviceID, label: String?,
    eidClockTolerance: @autoclosure @Sendable () -> Double = BridgeConfiguration().eidClockTolerance
  ) throws(StoreError) -> StoredKeyPairing {
    try refuseWhileFleetOwnsPairings()
    guard key.count == 32, key.allSatisfy({ PairingKeyFile.isLowerHexDigit($0) }) else {
      throw StoreError(.io, "a key must be 32 hex digits")
    }
    if scheme == .eid, let rotationExponent {
      // The others without this key's own row, which a pairing of the same key replaces.
      var others = try keyPairings().compactMap(\.rotationExponent)
      let replaced: Int64
      do throws(SQLiteError) {
        replaced = try key.withUnsafeBytes { (secret) -> Result<Int64, SQLiteError> in
          Result { () throws(SQLiteError) -> Int64 in
            try database.integer(
              """
              SELECT COALESCE((SELECT rotation_exponent FROM key_pairings WHERE scheme = 'eid' AND secret = ?
                LIMIT 1), -1)
              """, secret: secret)
          }
        }.get()
      } catch {
        throw StoreError(error, path: path)
      }
      if let index = others.firstIndex(where: { Int64($0) == replaced }) { others.remove(at: index) }
      if let refusal = ColdSearchLimit.refusal(
        eidClockTolerance: eidClockTolerance(), rotationExponents: others + [rotationExponent])
      {
        throw StoreError(.coldSearch, refusal)
      }
    }
    if scheme == .rpa {
      // Counted without this key's own row, which a pairing of the same key replaces.
      let others: Int64
      do throws(SQLiteError) {
        others = try key.withUnsafeBytes { (secret) -> Result<Int64, SQLiteError> in
          Result { () throws(SQLiteError) -> Int64 in
            try database.integer(
              "SELECT COUNT(*) FROM key_pairings WHERE scheme = 'rpa' AND secret != ?", secret: secret)
          }
        }.get()
      } catch {
        throw StoreError(error, path: path)
      }
      if others >= KeyedIdentity.maximumIRKPairings {
        throw StoreError(.full, KeyedIdentity.irkCapSentence)
      }
    }
    do throws(SQLiteError) {
      // withUnsafeBytes rethrows untyped: the typed error comes out through a Result.
      let id = try key.withUnsafeBytes { (secret) -> Result<Int64, SQLiteError> in
        Result { () throws(SQLiteError) -> Int64 in
          try database.transaction { () throws(SQLiteError) -> Int64 in
            try database.execute(
              "DELETE FROM key_pairings WHERE scheme = ? AND secret = ?", [.text(scheme.rawValue)],
              secret: secret)
            try database.execute(
              """
              INSERT INTO key_pairings (scheme, device_id, label, rotation_exponent, clock_offset, heard_window,
                created_at, secret) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)
              """,
              [
                .text(scheme.rawValue), .text(deviceId.rawValue), SQLiteValue(label),
                SQLiteValue(rotationExponent.map(Int.init)), clockOffset.map { .integer($0) } ?? .null,
                .real(wallClock()),
              ], secret: secret)
            return try database.query("SELECT last_insert_rowid()").first?.first?.integer ?? 0
          }
        }
      }.get()
      return StoredKeyPairing(
        pairing: Pairing(key: KeyedIdentity(scheme: scheme, pairing: id), deviceId: deviceId, label: label),
        rotationExponent: rotationExponent, clockOffset: clockOffset)
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Writes an EID pairing's tracking back (its clock offset and newest heard window), so a
  /// restart resumes it and a replay stays refused.
  public func saveTracking(pairing id: Int64, clockOffset: Int64, heardWindow: UInt32?) throws(StoreError) {
    do {
      try database.query(
        "UPDATE key_pairings SET clock_offset = ?, heard_window = ? WHERE id = ? AND scheme = 'eid'",
        [.integer(clockOffset), heardWindow.map { .integer(Int64($0)) } ?? .null, .integer(id)])
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// The authenticator for every pairing by key, the keys read in place into `AES128Key`s.
  /// `epoch` is the box's seconds at the pipeline's time 0; `tracking` holds pairings' newer
  /// tracking than the store's (the running authenticator's), by pairing number.
  public func keyAuthenticator(
    eidClockTolerance: Double, epoch: Int64, tracking: [Int64: EIDResolver.Tracking] = [:],
    rpaMaxAge: Double = BridgeConfiguration().rpaMaxAge
  ) throws(StoreError) -> KeyAuthenticator {
    var authenticator = KeyAuthenticator(
      eidClockTolerance: eidClockTolerance, epoch: epoch, rpaMaxAge: rpaMaxAge)
    do {
      try database.query(
        """
        SELECT id, scheme, device_id, label, rotation_exponent, clock_offset, heard_window, secret
        FROM key_pairings ORDER BY id
        """, secretColumn: 7
      ) { row, secret in
        guard let stored = Self.keyPairing(row), let key = stored.pairing.key,
          let aes = try? AES128Key(hexUTF8: secret)
        else { return }
        switch key.scheme {
        case .eid:
          guard let k = stored.rotationExponent.flatMap(RotationExponent.init(rawValue:)),
            let offset = stored.clockOffset
          else { return }
          let kept = tracking[key.pairing]
          authenticator.add(
            eid: EIDPairing(
              id: KeyPairingID(rawValue: key.pairing), identityKey: aes, rotationExponent: k,
              clockOffset: kept?.clockOffset ?? offset, heardWindow: kept?.heardWindow ?? stored.heardWindow))
        case .rpa:
          authenticator.add(irk: aes, pairing: key.pairing)
        }
      }
    } catch {
      throw StoreError(error, path: path)
    }
    return authenticator
  }
}
