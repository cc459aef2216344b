import BeaconCore
import BlueZ

/// The daemon's D-Bus `Status` as one typed value (docs/dbus-api.md, "Output fields"): the
/// contract between the daemon, which builds it (`StatusDocument+Build.swift`) and sends its
/// `json`, and `status`, `doctor` and `pair --nearest`, which decode it with `init(json:)`.
/// Every key is spelled once: the status's own in StatusDocument+JSON.swift, a beacon's in
/// BeaconCore's reported types (`Output/`). The health verdicts in it
/// (`Health.batteryLow` with its hysteresis, `silent`, `possibleClone`) are `BeaconHealth`'s,
/// made in the daemon; what they and the other figures mean for the box is judged once, in
/// `StatusVerdicts`.
public struct StatusDocument: Sendable, Equatable {
  /// What scanning does, and why it does not when it does not.
  public struct Scan: Sendable, Equatable {
    public enum State: String, Sendable, Equatable { case starting, scanning, waiting, failing }
    public var state: State
    public var backend: String?
    public var detail: String?
    /// What a waiting scan waits for, as a word `doctor` switches on (`detail` says it); absent
    /// from an older daemon's reply.
    public var reason: ScanWait.Reason?
    public var retryInSeconds: Int?
  }

  /// A beacon's identity, its calibration and its health, a beacon in range and the active
  /// beacon: BeaconCore's reported types, which every other output writes too.
  public typealias Identity = ReportedIdentity
  public typealias Calibration = ReportedCalibration
  public typealias Health = ReportedHealth
  public typealias BeaconInRange = ReportedBeacon
  public typealias ActiveBeacon = ReportedSnapshot

  public struct PairedBeacon: Sendable, Equatable {
    public var deviceId: DeviceID
    public var label: String?
    public var identity: Identity
    public var calibration: Calibration
    public var inRange: Bool
    public var lastSeenAgoSeconds: Double?
    public var rssi: Int?
    public var smoothedRSSI: Double?
    public var packetLoss: Double?
    public var lastRebootAgoSeconds: Double?
    public var health: Health

    /// `deviceId (label)`, or the device ID alone.
    public var name: String { label.map { "\(deviceId) (\($0))" } ?? deviceId.rawValue }
  }

  /// One trip, as `status` lists it and the trip calls answer.
  public struct Trip: Sendable, Equatable {
    public var tripId: TripID
    public var ended: Bool
    public var deviceId: DeviceID?
    public var resolution: String
    public var authentication: String?
    public var heldBatches: Int
    public var waitingForEnd: Int
  }

  /// The outbox's counts, as `status` and the support bundle show them.
  public struct Outbox: Sendable, Equatable {
    public var undelivered: Int
    public var deadLetters: Int
    public var unresolvedTrips: Int
    public var limit: Int
    public var oldestAgeSeconds: Double?
  }

  /// How posting has gone since the daemon started, over either sink.
  public struct Upload: Sendable, Equatable {
    /// `idle` (nothing posted yet), `delivering` (the last post went through) or `failing`.
    public enum State: String, Sendable, Equatable { case idle, delivering, failing }
    public var state: State
    public var delivered: Int
    public var deadLettered: Int
    public var consecutiveFailures: Int
    /// The sink's reason for the last failed post.
    public var lastError: String?
    public var lastDeliveredAgoSeconds: Double?
    public var lastFailedAgoSeconds: Double?
    public var retryInSeconds: Double?
  }

  /// How the pairings prove their beacons, and the replayed EIDs refused since the start.
  public struct Authentication: Sendable, Equatable {
    public var plainPairings: Int
    public var keyPairings: Int
    public var eidReplaysRefused: Int
    /// Replayed resolvable private addresses refused since the start.
    public var rpaReplaysRefused: Int = 0
    /// Pairings by IRK: a random address matches one by chance with probability N / 2^24.
    public var irkPairings: Int = 0
  }

  /// The fleet link (`[Fleet]`, docs/fleet.md).
  public struct Fleet: Sendable, Equatable {
    public var broker: String
    public var boxId: String
    public var connected: Bool
    public var lastDesiredVersion: Int64?
    public var appliedVersion: Int64?
    /// The applied document's settings, `[section: [key: value]]`.
    public var appliedSettings: [String: [String: String]]
    public var lastProblem: String?
  }

  public var armed: Bool
  /// The backend while it scans, nil otherwise.
  public var scanning: String?
  public var scan: Scan
  public var beaconsInRange: [BeaconInRange]
  public var activeBeacon: ActiveBeacon?
  public var trips: [Trip]
  public var outboundBatches: Int
  public var pairings: Int
  public var pairedBeacons: [PairedBeacon]
  /// Well-formed frames of kinds not decoded, by kind.
  public var ignoredFrames: [String: Int]
  public var upload: Upload
  public var authentication: Authentication
  /// BlueZ signals the scan read but dropped while the bridge held a batch past its read-ahead.
  public var droppedAdvertisements: Int
  /// ManufacturerData and ServiceData entries past a device's 32 that the scan left out.
  public var manufacturerDataOverLimit: Int
  /// Absent when the store could not be read.
  public var outbox: Outbox?
  /// Absent unless `[Fleet]` is configured.
  public var fleet: Fleet?
  /// The fleet's desired version set aside (applied while `[Fleet]` was configured; none of its
  /// settings or pairings apply until the broker's document is applied again). Absent when none.
  public var fleetSetAside: Int64?
}
