/// Health settings; every number is a configuration key (`[Health]`).
public struct HealthSettings: Hashable, Sendable {
  /// An Eddystone-TLM or -URL frame is linked to the beacon identities (iBeacon, AltBeacon,
  /// Eddystone-UID) heard from the same address within this many seconds, before or after it.
  public var telemetryLinkWindow: Double = 30
  /// A battery below this many millivolts is low (2,500 mV: a CR2477/CR2032 cell near its end).
  public var lowBatteryMillivolts: Double = 2500
  /// A paired beacon not seen for this many seconds is silent.
  public var silentAfter: Double = 600

  /// A low battery counts as recovered only this far above the threshold, so that a cell
  /// hovering at it (voltage sags with cold and with each transmission) does not flap.
  public static let batteryHysteresis: Double = 50

  /// The clone rule (`CloneWatch`): a window is this many seconds from the first time, in it, a
  /// paired plain identity came back to an address it had left for another.
  public static let cloneWindow: Double = 10
  /// Windows with such a return before the identity is a possible clone: one is a glitch (two
  /// units briefly set to the same identity while being configured), three are two transmitters.
  public static let cloneWindows = 3
  /// A possible clone clears after this many seconds without a return, and the windows counted
  /// start again: returns further apart than this are unrelated.
  public static let cloneQuietPeriod: Double = 300

  public init() {}
}

/// What one Eddystone-TLM frame said (Eddystone-TLM specification, unencrypted version 0x00),
/// and when it was heard.
public struct Telemetry: Hashable, Sendable {
  /// Battery voltage, mV; nil when the beacon sends 0 ("not supported", e.g. USB-powered).
  public var batteryMillivolts: Int?
  /// °C; nil when the beacon sends 0x8000 (not supported).
  public var temperature: Double?
  /// Advertising PDUs sent since power-on (ADV_CNT).
  public var advertisingCount: UInt32
  /// Seconds since power-on (SEC_CNT, 0.1 s resolution).
  public var uptime: Double
  public var heardAt: Timestamp
  public var address: BluetoothAddress

  public init(_ frame: EddystoneTLMFrame, from address: BluetoothAddress, at time: Timestamp) {
    batteryMillivolts = frame.batteryMillivolts == 0 ? nil : Int(frame.batteryMillivolts)
    temperature = frame.temperature
    advertisingCount = frame.advertisementCount
    uptime = frame.uptime
    heardAt = time
    self.address = address
  }
}

/// What a beacon said about itself beyond its identity: the last TLM linked to it, its URL, and
/// what was inferred from them.
public struct BeaconHealth: Hashable, Sendable {
  public var telemetry: Telemetry?
  /// The Eddystone-URL heard from the beacon's address, and its Tx power at 0 m.
  public var url: String?
  public var urlTxPower: Int?
  /// Times the uptime went backwards (the beacon restarted: battery change, brown-out, crash).
  public var reboots = 0
  public var lastRebootAt: Timestamp?
  public var batteryLow = false
  public var silent = false
  /// Heard from two Bluetooth addresses at once, repeatedly (`CloneWatch`): a plain identity
  /// copied to a second transmitter.
  public var possibleClone = false
  /// The addresses it was heard from at once while a possible clone, in address order (at most
  /// `CloneWatch.kept`); empty otherwise.
  public var cloneAddresses: [BluetoothAddress] = []

  public init() {}
}

/// A paired beacon crossing a health threshold: announced as `BeaconHealth` on D-Bus.
public struct HealthChange: Hashable, Sendable {
  public enum Kind: String, Hashable, Sendable {
    /// The battery fell below `lowBatteryMillivolts`.
    case batteryLow
    /// It rose back above the threshold (plus the hysteresis).
    case batteryRecovered
    /// The uptime went backwards.
    case rebooted
    /// Not seen for `silentAfter`.
    case silent
    /// Seen again after being silent.
    case seenAgain
    /// A plain identity heard from two addresses at once, in `cloneWindows` windows.
    case possibleClone
    /// No longer: no return to an address for `cloneQuietPeriod`.
    case cloneCleared
  }

  public var kind: Kind
  public var id: BeaconID
  public var deviceId: DeviceID
  public var health: BeaconHealth
  public var lastSeen: Timestamp?

  public init(kind: Kind, id: BeaconID, deviceId: DeviceID, health: BeaconHealth, lastSeen: Timestamp?) {
    self.kind = kind
    self.id = id
    self.deviceId = deviceId
    self.health = health
    self.lastSeen = lastSeen
  }

  /// For a line of text: `possibleClone`'s addresses (", heard from A and B at once"), else "".
  public var cloneDetail: String {
    guard kind == .possibleClone, !health.cloneAddresses.isEmpty else { return "" }
    return ", heard from \(health.cloneAddresses.map(\.description).joined(separator: " and ")) at once"
  }
}

/// A TLM frame heard, and the beacon it was linked to (nil while no identity was heard from its
/// address within the link window).
public struct TelemetryReport: Hashable, Sendable {
  public var id: BeaconID?
  public var telemetry: Telemetry

  public init(id: BeaconID?, telemetry: Telemetry) {
    self.id = id
    self.telemetry = telemetry
  }
}
