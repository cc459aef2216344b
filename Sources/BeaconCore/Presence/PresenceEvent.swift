#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Presence settings; every number is a configuration key.
public struct PresenceSettings: Hashable, Sendable {
  /// A beacon exits when it has not been seen for this long (docs/DESIGN.md, Behaviour: 10 s)…
  /// Backends whose cadence is slower (BlueZ active discovery, about one report per 10.24 s window) use a larger
  /// value or rely on their own `lost` events.
  public var exitTimeout: Double = 10
  /// …and when, given the beacon's own advertising interval and packet loss as observed, the
  /// chance that it is still there but every packet since was lost is below this. A fixed 10 s
  /// timeout flaps a 1 Hz beacon losing 40% of its packets about once an hour (0.4^10 per
  /// second); this keeps such a beacon in range (it exits after about 20 s of silence instead).
  public var exitMissProbability: Double = 1e-7
  /// Never later than this after the last sighting, however lossy the beacon looked.
  public var exitTimeoutMax: Double = 60
  public var rssi = RSSISettings()
  public var distance = DistanceModel()

  public init() {}
}

/// One beacon in range, as presence sees it.
public struct TrackedBeacon: Hashable, Sendable {
  public var id: BeaconID
  /// The address it was last heard from.
  public var address: BluetoothAddress
  public var firstSeen: Timestamp
  public var lastSeen: Timestamp
  public var sightings: Int
  /// The last known raw RSSI, dBm.
  public var lastRSSI: Int?
  /// The filtered RSSI, dBm.
  public var smoothedRSSI: Double?
  /// The beacon's calibrated power at 1 m, from its frame.
  public var powerAt1m: Int?
  public var distance: Double?
  public var proximity: Proximity
}

/// Why a beacon left.
public enum ExitReason: String, Hashable, Sendable {
  /// Not seen for `exitTimeout`.
  case timeout
  /// The backend reported the device gone.
  case lost
}

public enum PresenceEvent: Hashable, Sendable {
  case entered(TrackedBeacon)
  case exited(TrackedBeacon, ExitReason)
}
