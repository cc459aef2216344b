/// What happens to a trip that no beacon resolved (docs/DESIGN.md, Behaviour).
public enum UnresolvedPolicy: String, Hashable, Sendable, CaseIterable {
  /// Batches stay durable, flagged unresolved, until `trip assign` tags them.
  case hold
  /// Use the configured `fallbackDeviceId`.
  case fallback
}

/// When a trip's batches are posted (`[Trips] sending`): the seed app's
/// `isRealtimeTripSendingEnabled`.
public enum TripSending: String, Hashable, Sendable, CaseIterable {
  /// As soon as each batch is tagged.
  case realtime
  /// Committed as they arrive, and posted in order only once the trip has ended.
  case postTrip
}

/// Trip settings; every value is a configuration key.
public struct TripSettings: Hashable, Sendable {
  /// How long after trip start a late beacon may still resolve the trip (seconds).
  public var lateWindow: Double = 60
  public var unresolvedPolicy: UnresolvedPolicy = .hold
  public var fallbackDeviceId: DeviceID?
  /// The device ID a smart-mode host (no beacon hook) tags its trips with: the vehicle unit serial
  /// number from the account.
  public var configuredDeviceId: DeviceID?
  public var sending: TripSending = .realtime
  /// The most trips open (started, not ended) at once. Past it, `trip start` is refused with a
  /// sentence; a journal that restores more ends the oldest (`BeaconPipeline.restore`). Each open
  /// trip is kept in memory and in the store, and restored at every start: the bound keeps a
  /// recorder that never ends its trips from growing the daemon without limit.
  public var maxOpenTrips: Int = 64
  /// The largest `maxOpenTrips` a configuration may set.
  public static let maxOpenTripsRange: ClosedRange<Double> = 1...100_000

  public init() {}
}
