/// The one type an integrator writes: backend calls, configuration values, a logging adapter and
/// the beacon trip-start hook. The library calls it; it never calls the library except through
/// the `BeaconTripStart` it is handed.
///
/// This is the Linux counterpart of the Scope SDKs' `ScopeHost` (`AppScopeHost` in the seed app).
public protocol ScopeHost: Sendable {
  /// Configuration values. Read when the bridge starts (and on `reload`).
  var configuration: BridgeConfiguration { get }

  /// The logging adapter: route records to the app's log (journald, a file, a test buffer).
  func log(_ record: LogRecord)

  /// Beacon/mHub mode: called at trip start. A beacon-mode host forwards to its beacon layer by
  /// calling `trip.snapshotActiveBeacon()`, as `AppScopeHost` forwards to
  /// `BLEFrameworkProxy.onBeaconTripStart()`. The default does nothing: a smart-mode host's trips
  /// take `configuration.trips.configuredDeviceId`.
  func onBeaconTripStart(_ trip: BeaconTripStart) async

  /// The upload layer. Called once per tagged batch, in order within a trip. Throwing keeps the
  /// batch queued: the bridge retries it with backoff and never drops it.
  func postTripEventBatch(_ batch: TaggedTripBatch) async throws
}

extension ScopeHost {
  public func onBeaconTripStart(_ trip: BeaconTripStart) async {}
}

/// Handed to `ScopeHost.onBeaconTripStart`.
public struct BeaconTripStart: Sendable {
  public let tripId: TripID
  let bridge: BeaconBridge

  /// Snapshots the active paired beacon for this trip. With none active, the trip waits up to
  /// `lateWindow` for one, and this returns nil.
  @discardableResult
  public func snapshotActiveBeacon() async -> BeaconSnapshot? {
    await bridge.snapshotActiveBeacon(for: tripId)
  }
}

/// One log record from the bridge.
public struct LogRecord: Hashable, Sendable, CustomStringConvertible {
  /// syslog priorities, as journald reads them from `<N>` prefixes.
  public enum Level: Int, Hashable, Sendable, Comparable, CaseIterable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue > rhs.rawValue }

    public var name: String {
      switch self {
      case .error: "error"
      case .warning: "warning"
      case .notice: "notice"
      case .info: "info"
      case .debug: "debug"
      }
    }
  }

  public var level: Level
  public var message: String
  public var at: Timestamp

  public init(level: Level, message: String, at: Timestamp) {
    self.level = level
    self.message = message
    self.at = at
  }

  public var description: String { "\(level.name): \(message)" }
}
