import BeaconCore

/// The daemon's `Status` (docs/dbus-api.md, "Output fields") as `status`, `status --json`'s
/// reader and `doctor` use it: the one place outside the daemon that knows the field names.
/// The daemon writes the JSON (`BridgeStatus.json(scan:outbox:)`, StatusJSON.swift, next door);
/// `init(json:)` reads it back, and `DaemonStatusTests` holds the two to each other. The health
/// verdicts in it (`batteryLow` with its hysteresis, `silent`, `possibleClone`) are
/// `BeaconHealth`'s, made once in the daemon: readers show them and never judge again.
public struct DaemonStatus: Sendable, Equatable {
  /// What scanning does: `starting`, `scanning`, `waiting` or `failing`, and why.
  public struct Scan: Sendable, Equatable {
    public var state: String
    public var detail: String?
  }

  /// A beacon's identity fields as the status gives them (an iBeacon's; other kinds have none).
  public struct Identity: Sendable, Equatable {
    public var uuid: String?
    public var major: Int?
    public var minor: Int?

    /// `UUID major/minor`, or nil without a UUID.
    public var text: String? { uuid.map { "\($0) \(major ?? 0)/\(minor ?? 0)" } }
  }

  public struct Beacon: Sendable, Equatable {
    public var identity: Identity
    public var smoothedRSSI: Double?
    public var proximity: String?
  }

  public struct ActiveBeacon: Sendable, Equatable {
    public var deviceId: String
    public var identity: Identity
  }

  public struct PairedBeacon: Sendable, Equatable {
    public var deviceId: String
    public var label: String?
    public var inRange: Bool
    public var lastSeenAgoSeconds: Double?
    public var smoothedRSSI: Double?
    public var packetLoss: Double?
    public var batteryMillivolts: Int?
    /// `BeaconHealth`'s verdict: below `lowBatteryMillivolts`, and not yet back above it by the
    /// hysteresis.
    public var batteryLow: Bool
    /// `BeaconHealth`'s verdict: not seen for `silentAfter`.
    public var silent: Bool
    /// `BeaconHealth`'s verdict: its plain identity heard from two addresses at once, repeatedly;
    /// `cloneAddresses` are those addresses.
    public var possibleClone = false
    public var cloneAddresses: [String] = []
    public var telemetryAgeSeconds: Double?
    public var temperature: Double?
    public var uptimeSeconds: Double?
    public var advertisingCount: Int?
    public var reboots: Int
    public var lastRebootAgoSeconds: Double?
    public var url: String?

    /// `deviceId (label)`, or the device ID alone.
    public var name: String { label.map { "\(deviceId) (\($0))" } ?? deviceId }
  }

  /// How the pairings prove their beacons (docs/dbus-api.md): by identity in clear or by key,
  /// and the replayed EIDs refused since the daemon started.
  public struct Authentication: Sendable, Equatable {
    public var plainPairings: Int
    public var keyPairings: Int
    public var eidReplaysRefused: Int
  }

  public var authentication: Authentication?

  public struct Trip: Sendable, Equatable {
    public var tripId: String
    public var deviceId: String?
    public var resolution: String
    public var heldBatches: Int
    public var waitingForEnd: Int
  }

  public struct Outbox: Sendable, Equatable {
    public var undelivered: Int
    public var deadLetters: Int
    public var unresolvedTrips: Int
  }

  /// How posting goes (`UploadState.json`): `idle`, `delivering` or `failing`.
  public struct Upload: Sendable, Equatable {
    public var state: String
    public var delivered: Int
    public var consecutiveFailures: Int
    public var lastError: String?
    public var lastDeliveredAgoSeconds: Double?
    public var retryInSeconds: Double?
  }

  /// The fleet link (`[Fleet]`, docs/fleet.md).
  public struct Fleet: Sendable, Equatable {
    public var broker: String
    public var boxId: String
    public var connected: Bool
    public var lastDesiredVersion: Int?
    public var appliedVersion: Int?
    public var lastProblem: String?
  }

  /// The backend while it scans, nil otherwise.
  public var scanning: String?
  public var scan: Scan?
  public var beaconsInRange: [Beacon]
  public var activeBeacon: ActiveBeacon?
  public var pairedBeacons: [PairedBeacon]
  /// Frames ignored, by reason, sorted by reason.
  public var ignoredFrames: [(reason: String, count: Int)]
  public var trips: [Trip]
  public var outbox: Outbox?
  /// Nil from a daemon that does not report it.
  public var upload: Upload?
  /// Nil when `[Fleet]` is not configured.
  public var fleet: Fleet?
  /// Advertisements the BlueZ source dropped while the bridge held a batch past its read-ahead
  /// bound, and ManufacturerData entries past a device's cap (0 from a daemon that does not say).
  public var droppedAdvertisements: Int
  public var manufacturerDataOverLimit: Int
  /// The reply as the daemon sent it: what `status --json` and the support bundle show.
  public let reply: JSONValue

  public static func == (lhs: DaemonStatus, rhs: DaemonStatus) -> Bool {
    lhs.scanning == rhs.scanning && lhs.scan == rhs.scan && lhs.beaconsInRange == rhs.beaconsInRange
      && lhs.activeBeacon == rhs.activeBeacon && lhs.pairedBeacons == rhs.pairedBeacons
      && lhs.ignoredFrames.map(\.reason) == rhs.ignoredFrames.map(\.reason)
      && lhs.ignoredFrames.map(\.count) == rhs.ignoredFrames.map(\.count) && lhs.trips == rhs.trips
      && lhs.outbox == rhs.outbox && lhs.upload == rhs.upload && lhs.fleet == rhs.fleet
      && lhs.droppedAdvertisements == rhs.droppedAdvertisements
      && lhs.manufacturerDataOverLimit == rhs.manufacturerDataOverLimit
  }

  /// Reads a `Status` reply. A field that is missing or of another type reads as absent (an
  /// older or newer daemon), never as a failure.
  public init(json: JSONValue) {
    reply = json
    scanning = json["scanning"]?.stringValue
    scan = json["scan"].flatMap { scan in
      scan["state"]?.stringValue.map { Scan(state: $0, detail: scan["detail"]?.stringValue) }
    }
    beaconsInRange = (json["beaconsInRange"]?.arrayValue ?? []).map(Self.beacon)
    activeBeacon = json["activeBeacon"].flatMap { active in
      active["deviceId"]?.stringValue.map { ActiveBeacon(deviceId: $0, identity: Self.identity(active)) }
    }
    pairedBeacons = (json["pairedBeacons"]?.arrayValue ?? []).map(Self.pairedBeacon)
    let ignored = json["ignoredFrames"]?.objectValue ?? [:]
    ignoredFrames = ignored.keys.sorted().map { (reason: $0, count: Self.int(ignored[$0]) ?? 0) }
    trips = (json["trips"]?.arrayValue ?? []).map(Self.trip)
    droppedAdvertisements = Self.int(json["droppedAdvertisements"]) ?? 0
    manufacturerDataOverLimit = Self.int(json["manufacturerDataOverLimit"]) ?? 0
    outbox = json["outbox"].flatMap(Self.outbox)
    upload = json["upload"].flatMap(Self.upload)
    fleet = json["fleet"].flatMap { f in
      guard let broker = f["broker"]?.stringValue, let boxId = f["boxId"]?.stringValue else { return nil }
      return Fleet(
        broker: broker, boxId: boxId, connected: f["connected"] == .bool(true),
        lastDesiredVersion: Self.int(f["lastDesiredVersion"]), appliedVersion: Self.int(f["appliedVersion"]),
        lastProblem: f["lastProblem"]?.stringValue)
    }
    authentication = json["authentication"].flatMap { a in
      guard case .object = a else { return nil }
      return Authentication(
        plainPairings: Self.int(a["plainPairings"]) ?? 0, keyPairings: Self.int(a["keyPairings"]) ?? 0,
        eidReplaysRefused: Self.int(a["eidReplaysRefused"]) ?? 0)
    }
  }

  private static func int(_ value: JSONValue?) -> Int? {
    value?.intValue.map { Int(truncatingIfNeeded: $0) }
  }

  private static func identity(_ o: JSONValue) -> Identity {
    Identity(uuid: o["uuid"]?.stringValue, major: int(o["major"]), minor: int(o["minor"]))
  }

  private static func beacon(_ o: JSONValue) -> Beacon {
    Beacon(
      identity: identity(o), smoothedRSSI: o["smoothedRssi"]?.doubleValue,
      proximity: o["proximity"]?.stringValue)
  }

  private static func pairedBeacon(_ b: JSONValue) -> PairedBeacon {
    var beacon = PairedBeacon(
      deviceId: b["deviceId"]?.stringValue ?? "?", label: b["label"]?.stringValue,
      inRange: b["inRange"] == .bool(true), lastSeenAgoSeconds: b["lastSeenAgoSeconds"]?.doubleValue,
      smoothedRSSI: b["smoothedRssi"]?.doubleValue, packetLoss: b["packetLoss"]?.doubleValue,
      batteryMillivolts: int(b["batteryMv"]), batteryLow: b["batteryLow"] == .bool(true),
      silent: b["silent"] == .bool(true), telemetryAgeSeconds: nil, temperature: nil, uptimeSeconds: nil,
      advertisingCount: nil, reboots: int(b["reboots"]) ?? 0, lastRebootAgoSeconds: nil, url: nil)
    beacon.telemetryAgeSeconds = b["telemetryAgeSeconds"]?.doubleValue
    beacon.temperature = b["temperatureC"]?.doubleValue
    beacon.uptimeSeconds = b["uptimeSeconds"]?.doubleValue
    beacon.advertisingCount = int(b["advertisingCount"])
    beacon.lastRebootAgoSeconds = b["lastRebootAgoSeconds"]?.doubleValue
    beacon.url = b["url"]?.stringValue
    beacon.possibleClone = b["possibleClone"] == .bool(true)
    beacon.cloneAddresses = (b["cloneAddresses"]?.arrayValue ?? []).compactMap(\.stringValue)
    return beacon
  }

  private static func trip(_ t: JSONValue) -> Trip {
    Trip(
      tripId: t["tripId"]?.stringValue ?? "?", deviceId: t["deviceId"]?.stringValue,
      resolution: t["resolution"]?.stringValue ?? "?", heldBatches: int(t["heldBatches"]) ?? 0,
      waitingForEnd: int(t["waitingForEnd"]) ?? 0)
  }

  private static func outbox(_ o: JSONValue) -> Outbox? {
    guard case .object = o else { return nil }
    return Outbox(
      undelivered: int(o["undelivered"]) ?? 0, deadLetters: int(o["deadLetters"]) ?? 0,
      unresolvedTrips: int(o["unresolvedTrips"]) ?? 0)
  }

  private static func upload(_ u: JSONValue) -> Upload? {
    guard let state = u["state"]?.stringValue else { return nil }
    return Upload(
      state: state, delivered: int(u["delivered"]) ?? 0,
      consecutiveFailures: int(u["consecutiveFailures"]) ?? 0,
      lastError: u["lastError"]?.stringValue,
      lastDeliveredAgoSeconds: u["lastDeliveredAgoSeconds"]?.doubleValue,
      retryInSeconds: u["retryInSeconds"]?.doubleValue)
  }
}
