/// What an EID came to.
public enum EIDResolution: Equatable, Sendable {
  /// The EID is the pairing's for `window` (the beacon's clock >> K).
  case resolved(KeyPairingID, window: UInt32)
  /// The pairing's, but from a window older than the newest heard: refused, and counted.
  case replay(KeyPairingID, window: UInt32, heardWindow: UInt32)
  /// No pairing's within the tolerance.
  case unknown(EIDUnknownReason)
}

public enum EIDUnknownReason: Equatable, Sendable {
  /// Searched: no pairing makes this EID within the tolerance of its expected clock.
  case notPaired
  /// A cached EID whose window is now outside the tolerance (the beacon was away that long).
  case outsideTolerance
  /// Searched within `negativeCacheSeconds`, and unknown then.
  case recentlyUnknown
  /// The search budget is spent (a flood of unknown EIDs); the next advertisement tries again.
  case searchDeferred
  /// Not in the table: its owner searches for it elsewhere (`EIDResolver.search(for:)`), and a
  /// later advertisement resolves from the table once found.
  case searchNeeded
}
