/// Why the store could not be used. Every case keeps the file: a corrupt or locked database is
/// reported, never deleted or overwritten.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: String, Hashable, Sendable {
    case cannotCreateDirectory
    case corrupt
    case locked
    case newerSchema
    /// The file at the store's path is not a beaconbridge store; it was left unchanged.
    case foreign
    case io
    /// `[Fleet]` is configured: the desired document owns the pairings.
    case fleetOwnsPairings
    /// The store holds as many pairings of a kind as it may (`KeyedIdentity.maximumIRKPairings`).
    case full
    /// An EID pairing or a tolerance whose cold search would take longer than
    /// `ColdSearchLimit.maximumSeconds`.
    case coldSearch
  }

  public var code: Code
  public var description: String

  init(_ code: Code, _ description: String) {
    self.code = code
    self.description = description
  }

  init(_ error: SQLiteError, path: String) {
    if error.isCorrupt {
      self.init(
        .corrupt,
        "the store \(path) is damaged (\(error.message)); it was left as it is. Move it aside to start afresh, or keep it for support"
      )
    } else if error.isBusy {
      self.init(.locked, "the store \(path) is locked by another process (\(error.message)); try again")
    } else {
      self.init(.io, "the store \(path): \(error.description)")
    }
  }
}
