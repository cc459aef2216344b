import BeaconCore
import FoundationEssentials
import GZone

/// The G-Zone poller's memory: the last load it diffed against (schema version 3). Kept so
/// that a restart diffs the first new load against it instead of replaying old events.
extension Store {
  static let gzoneSchema = """
    CREATE TABLE IF NOT EXISTS gzone_last_load (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      load TEXT NOT NULL,
      loaded_at REAL NOT NULL
    );
    """

  /// The last load, or nil before the first one. A stored load that no longer reads (a damaged
  /// row) counts as none: the next load becomes the baseline.
  public func gzoneLastLoad() throws(StoreError) -> GZoneLoad? {
    let rows: [[SQLiteValue]]
    do { rows = try database.query("SELECT load FROM gzone_last_load WHERE id = 1") } catch {
      throw StoreError(error, path: path)
    }
    guard let text = rows.first?.first?.text, let json = try? JSONText.parse(Array(text.utf8)) else {
      return nil
    }
    return try? GZoneLoad(json: json, origin: path)
  }

  /// Replaces the last load. Committed before it returns.
  public func saveGZoneLoad(_ load: GZoneLoad) throws(StoreError) {
    do {
      try database.query(
        "INSERT OR REPLACE INTO gzone_last_load (id, load, loaded_at) VALUES (1, ?, ?)",
        [.text(load.json.compactText), .real(wallClock())])
    } catch {
      throw StoreError(error, path: path)
    }
  }
}
