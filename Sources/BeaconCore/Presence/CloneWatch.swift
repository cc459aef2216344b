/// One paired plain identity's recent addresses, for the clone rule (`BeaconHealthBook`).
///
/// A plain identity (iBeacon, AltBeacon, Eddystone-UID) is copied by anyone who hears it, and a
/// copy shows as the same identity heard from a second address. An address change alone is no
/// copy, though: a beacon with a resolvable private address rotates it (every 15 minutes by
/// default), and presence then hears the identity from the new address and never again from the
/// old one. Two transmitters instead interleave, A, B, A, B, so what counts is a return: the
/// identity heard again from an address it left for another less than
/// `HealthSettings.cloneWindow` ago. A window (that long from its first return) with a return
/// counts once; `cloneWindows` such windows, none more than `cloneQuietPeriod` after the last
/// return, make a possible clone, which clears after that quiet period. One window is not enough,
/// so a stray late frame from a rotated-away address does not raise it, and the quiet period is
/// long against the window, so a clone heard on and off does not flap.
///
/// Fed only when presence hears the identity from another address than its last sighting's
/// (`PresenceTracker.movedSinceCleared`): a beacon heard from one address costs nothing here. At
/// most `kept` addresses per identity, the least recently heard replaced first.
struct CloneWatch: Sendable {
  static let kept = 4

  /// The last addresses the identity was heard from, with when it was last heard there as far as
  /// this knows: when it moved there, or away.
  private(set) var addresses: [(address: BluetoothAddress, heardAt: Timestamp)]
  /// The address of its last sighting.
  private var current: BluetoothAddress
  /// When the window in force started (its first return); nil before any.
  private var windowStart: Timestamp?
  /// Windows with a return since the last quiet period.
  private(set) var windows = 0
  /// The last return.
  private(set) var lastReturn: Timestamp?
  /// Whether the identity is a possible clone (until a quiet period clears it).
  var flagged = false

  /// The identity first heard from `address` after another (which this never learns: presence
  /// keeps only the last address). One return of a clone goes uncounted for it.
  init(address: BluetoothAddress, at time: Timestamp) {
    addresses = [(address, time)]
    current = address
  }

  /// The last time anything was heard here.
  var lastActivity: Timestamp { addresses.lazy.map(\.heardAt).max() ?? .zero }

  /// The identity is heard from `address` at `time`, its last sighting being from another.
  /// Returns whether this was a return, and whether the windows counted reached the rule.
  mutating func moved(to address: BluetoothAddress, at time: Timestamp) -> (returned: Bool, clone: Bool) {
    // The address it leaves was heard until now.
    stamp(current, time)
    let returned = addresses.contains {
      $0.address == address && time - $0.heardAt <= HealthSettings.cloneWindow
    }
    stamp(address, time)
    current = address
    guard returned else { return (false, false) }
    if let last = lastReturn, time - last > HealthSettings.cloneQuietPeriod {
      windows = 0
      windowStart = nil
    }
    lastReturn = time
    if windowStart.map({ time - $0 >= HealthSettings.cloneWindow }) ?? true {
      windows += 1
      windowStart = time
    }
    return (true, windows >= HealthSettings.cloneWindows)
  }

  /// The addresses heard within the window before `time`, in address order: the transmitters.
  func concurrent(at time: Timestamp) -> [BluetoothAddress] {
    addresses.filter { time - $0.heardAt <= HealthSettings.cloneWindow }.map(\.address).sorted()
  }

  /// Whether the quiet period has passed since the last return as of `time`.
  func isQuiet(at time: Timestamp) -> Bool {
    lastReturn.map { time - $0 >= HealthSettings.cloneQuietPeriod } ?? true
  }

  /// After a quiet period: no longer a possible clone, and the windows count from nothing again.
  mutating func clear() {
    flagged = false
    windows = 0
    windowStart = nil
  }

  private mutating func stamp(_ address: BluetoothAddress, _ time: Timestamp) {
    if let i = addresses.firstIndex(where: { $0.address == address }) {
      addresses[i].heardAt = max(addresses[i].heardAt, time)
      return
    }
    if addresses.count >= Self.kept,
      let oldest = addresses.indices.min(by: { addresses[$0].heardAt < addresses[$1].heardAt })
    {
      addresses.remove(at: oldest)
    }
    addresses.append((address, time))
  }
}
