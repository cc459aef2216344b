#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Every setting of the core, by the camelCase key that the scenario file's `config` object and
/// the configuration file use.
public struct BridgeConfiguration: Hashable, Sendable {
  public var presence = PresenceSettings()
  public var selector = SelectorSettings()
  public var trips = TripSettings()
  public var health = HealthSettings()
  /// First retry delay after `postTripEventBatch` throws (seconds); doubles up to `postRetryMax`.
  public var postRetryInitial: Double = 1
  public var postRetryMax: Double = 60
  /// Each retry delay is spread by ± this fraction.
  public var postRetryJitter: Double = 0.2
  /// Only an identity proven by a key (Eddystone-EID, a resolvable private address) may become
  /// the active beacon: a plain iBeacon, AltBeacon or Eddystone-UID can be cloned by any phone.
  public var requireAuthenticated = false
  /// How far from its expected clock an Eddystone-EID beacon's EID is searched for, seconds; one
  /// day covers the spec's recovery from a power loss (docs/authentication.md).
  public var eidClockTolerance: Double = 86_400
  /// How long after it was first heard a resolvable private address still proves its device,
  /// seconds: devices rotate it about every 15 minutes, and a copy heard later is a replay
  /// (docs/authentication.md).
  public var rpaMaxAge: Double = 1_800

  public init() {}

  /// One documented setting.
  public struct Key: Sendable {
    public let name: String
    public let summary: String
    /// The range of a number setting (nil for words and device IDs).
    public let number: SettingNumber?
    /// What the value is: a scenario's `config` takes a JSON number for a number, a JSON
    /// boolean for a boolean, and the text form (a string) for any.
    public let kind: Kind
    /// A number setting's current value, for `problems()`.
    let numberValue: (@Sendable (BridgeConfiguration) -> Double)?
    let get: @Sendable (BridgeConfiguration) -> String
    let set: @Sendable (inout BridgeConfiguration, String) throws(ConfigurationError) -> Void
  }

  public enum Kind: Sendable, Hashable {
    case number
    case boolean
    /// Named values (`hold`, `fallback`) and device IDs.
    case text
  }

  /// The settings, in documentation order.
  public static let keys: [Key] = [
    number(
      "exitTimeout", "a beacon exits after this long unseen", \.presence.exitTimeout, 0.1...86_400,
      unit: "seconds"),
    number(
      "exitMissProbability", "a lossy beacon exits once silence this unlikely has passed",
      \.presence.exitMissProbability, 1e-12...0.5, unit: ""),
    number(
      "exitTimeoutMax", "a beacon exits at the latest after this long unseen", \.presence.exitTimeoutMax,
      0.1...86_400, unit: "seconds"),
    number(
      "activeHold", "the active beacon is held this long after its last sighting", \.selector.activeHold,
      0...86_400, unit: "seconds"),
    count(
      "dwellSightings", "sightings a paired beacon needs before it can become active",
      \.selector.dwellSightings, 1...1000),
    number(
      "dwellSeconds", "time span those sightings must cover", \.selector.dwellSeconds, 0...3600,
      unit: "seconds"),
    number(
      "switchMargin", "dB stronger another candidate must be to take over", \.selector.switchMargin, 0...100,
      unit: "dB"),
    number(
      "switchSustain", "how long it must stay that much stronger", \.selector.switchSustain, 0...3600,
      unit: "seconds"),
    number(
      "lateWindow", "how long after trip start a beacon may still resolve the trip", \.trips.lateWindow,
      0...86_400, unit: "seconds"),
    choice(
      "unresolvedPolicy", "hold or fallback: what happens to a trip no beacon resolved",
      \.trips.unresolvedPolicy),
    deviceID(
      "fallbackDeviceId", "the device ID unresolved trips take under unresolvedPolicy=fallback",
      \.trips.fallbackDeviceId),
    deviceID(
      "deviceId", "smart mode: the device ID trips take when the host takes no beacon snapshot",
      \.trips.configuredDeviceId),
    count(
      "maxOpenTrips",
      "the most trips open at once; past it trip start is refused, and a restart ends the oldest open ones",
      \.trips.maxOpenTrips, TripSettings.maxOpenTripsRange),
    choice(
      "sending", "realtime or postTrip: post each batch at once, or a trip's batches after its end",
      \.trips.sending),
    choice("rssiFilter", "kalman, runningAverage or arma", \.presence.rssi.filter),
    number(
      "kalmanSigma", "Kalman measurement noise σ, dB", \.presence.rssi.kalmanMeasurementSigma, 0.01...100,
      unit: "dB"),
    number(
      "kalmanProcessNoise", "Kalman process noise, dB² per second",
      \.presence.rssi.kalmanProcessNoisePerSecond, 0...10_000, unit: ""),
    number(
      "kalmanInterval", "the reading interval the Kalman noise stands for, seconds",
      \.presence.rssi.kalmanReferenceInterval, 0.001...3600, unit: "seconds"),
    number(
      "runningAverageWindow", "running-average window, seconds", \.presence.rssi.runningAverageWindow,
      0...3600, unit: "seconds"),
    number(
      "runningAverageTrim", "fraction trimmed at each end of the running average",
      \.presence.rssi.runningAverageTrim, 0...0.49, unit: ""),
    number("armaCoefficient", "ARMA coefficient c", \.presence.rssi.armaCoefficient, 0.001...1, unit: ""),
    number(
      "armaInterval", "the interval one ARMA step stands for", \.presence.rssi.armaReferenceInterval,
      0.001...3600, unit: "seconds"),
    number(
      "distanceA", "curve-fit coefficient A (AltBeacon default 0.42093)", \.presence.distance.coefficientA,
      -100...100, unit: ""),
    number(
      "distanceB", "curve-fit coefficient B (AltBeacon default 6.9476)", \.presence.distance.coefficientB,
      -100...100, unit: ""),
    number(
      "distanceC", "curve-fit coefficient C (AltBeacon default 0.54992)", \.presence.distance.coefficientC,
      -100...100, unit: ""),
    number(
      "immediateDistance", "metres under which a beacon is immediate", \.presence.distance.immediateWithin,
      0...1000, unit: "metres"),
    number(
      "nearDistance", "metres under which a beacon is near", \.presence.distance.nearWithin, 0...1000,
      unit: "metres"),
    number(
      "lowBatteryMillivolts", "a paired beacon's TLM battery below this is low (doctor warns, BeaconHealth)",
      \.health.lowBatteryMillivolts, 0...10_000, unit: "mV"),
    number(
      "silentAfter", "a paired beacon not seen for this long is silent (doctor warns, BeaconHealth)",
      \.health.silentAfter, 1...31_536_000, unit: "seconds"),
    number(
      "telemetryLinkWindow", "TLM and URL frames link to identities heard from their address this recently",
      \.health.telemetryLinkWindow, 0...3600, unit: "seconds"),
    Key(
      name: "requireAuthenticated",
      summary: "true or false: only a beacon proven by a key (EID, RPA) may become the active beacon",
      number: nil, kind: .boolean, numberValue: nil, get: { $0.requireAuthenticated ? "true" : "false" },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        switch text {
        case "true": config.requireAuthenticated = true
        case "false": config.requireAuthenticated = false
        default:
          throw ConfigurationError("requireAuthenticated must be true or false, not \(text.quotedForMessage)")
        }
      }),
    number(
      "eidClockTolerance", "how far from its expected clock an Eddystone-EID is searched for",
      \.eidClockTolerance, 0...604_800, unit: "seconds"),
    number(
      "rpaMaxAge", "a private address proves its device for this long after it was first heard",
      \.rpaMaxAge, 60...86_400, unit: "seconds"),
    number(
      "postRetryInitial", "first retry delay after an upload failure", \.postRetryInitial, 0.001...86_400,
      unit: "seconds"),
    number("postRetryMax", "longest retry delay", \.postRetryMax, 0.001...86_400, unit: "seconds"),
    number(
      "postRetryJitter", "each retry delay is spread by ± this fraction", \.postRetryJitter, 0...0.9, unit: ""
    ),
  ]

  public static func key(named name: String) -> Key? { keys.first { $0.name == name } }

  /// The configuration file section each setting lives in.
  public static func section(of name: String) -> String {
    switch name {
    case "dwellSightings", "dwellSeconds", "switchMargin", "switchSustain", "activeHold",
      "requireAuthenticated",
      "eidClockTolerance", "rpaMaxAge":
      "ActiveBeacon"
    case "lateWindow", "unresolvedPolicy", "fallbackDeviceId", "deviceId", "maxOpenTrips", "sending": "Trips"
    case "postRetryInitial", "postRetryMax", "postRetryJitter": "Upload"
    case "lowBatteryMillivolts", "silentAfter", "telemetryLinkWindow": "Health"
    default: "Presence"
    }
  }

  /// Sets one key from its text form.
  public mutating func set(_ name: String, to text: String) throws(ConfigurationError) {
    guard let key = Self.key(named: name) else { throw Self.unknown(name) }
    try key.set(&self, text)
  }

  /// The refusal of a setting no key has, listing those there are.
  public static func unknown(_ name: String) -> ConfigurationError {
    let known = keys.map(\.name).joined(separator: ", ")
    return ConfigurationError("unknown setting \"\(name)\" (known: \(known))")
  }

  public func value(of name: String) -> String? { Self.key(named: name)?.get(self) }

  /// Every problem with the values together, or nothing. The bridge refuses to arm on any. Each
  /// number is checked against its key's range (the same `SettingNumber` the file and a scenario's
  /// `config` are read with, for values set in code); then the rules between keys.
  public func problems() -> [String] {
    var out: [String] = []
    for key in Self.keys {
      if let rule = key.number, let value = key.numberValue?(self),
        let problem = rule.problem(key.name, value)
      {
        out.append(problem)
      }
    }
    if presence.exitTimeoutMax < presence.exitTimeout {
      out.append("exitTimeoutMax must be at least exitTimeout")
    }
    if trips.unresolvedPolicy == .fallback, trips.fallbackDeviceId == nil {
      out.append("unresolvedPolicy=fallback needs a fallbackDeviceId")
    }
    if presence.distance.immediateWithin >= presence.distance.nearWithin {
      out.append("immediateDistance must be below nearDistance")
    }
    if postRetryMax < postRetryInitial { out.append("postRetryInitial must be at most postRetryMax") }
    return out
  }

  private static func number(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Double> & Sendable,
    _ range: ClosedRange<Double>, unit: String
  ) -> Key {
    let rule = SettingNumber(range, unit: unit)
    return Key(
      name: name, summary: summary, number: rule, kind: .number, numberValue: { $0[keyPath: path] },
      get: { formatNumber($0[keyPath: path]) },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        config[keyPath: path] = try rule.parse(name, text)
      })
  }

  private static func count(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Int> & Sendable,
    _ range: ClosedRange<Double>
  ) -> Key {
    let rule = SettingNumber(range, unit: "", whole: true)
    return Key(
      name: name, summary: summary, number: rule, kind: .number, numberValue: { Double($0[keyPath: path]) },
      get: { String($0[keyPath: path]) },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        config[keyPath: path] = Int(try rule.parse(name, text))
      })
  }

  /// A setting of named values, an enum's raw values; any other text is refused with the list.
  private static func choice<Value: RawRepresentable<String> & CaseIterable & Sendable>(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Value> & Sendable
  ) -> Key {
    Key(
      name: name, summary: summary, number: nil, kind: .text, numberValue: nil,
      get: { $0[keyPath: path].rawValue },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        guard let value = Value(rawValue: text) else {
          let names = Value.allCases.map(\.rawValue)
          let list =
            names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names.last! : names.joined()
          throw ConfigurationError("\(name) must be \(list), not \(text.quotedForMessage)")
        }
        config[keyPath: path] = value
      })
  }

  /// A device ID setting: empty means unset; anything else must be a valid `DeviceID`.
  private static func deviceID(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, DeviceID?> & Sendable
  ) -> Key {
    Key(
      name: name, summary: summary, number: nil, kind: .text, numberValue: nil,
      get: { $0[keyPath: path]?.rawValue ?? "" },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        guard !text.isEmpty else {
          config[keyPath: path] = nil
          return
        }
        let id: DeviceID
        do throws(IdentifierError) { id = try DeviceID(text) } catch {
          throw ConfigurationError("\(name): \(error.description)")
        }
        config[keyPath: path] = id
      })
  }
}

/// A setting's number in its shortest exact text: "10", "0.1", "1e-07".
func formatNumber(_ value: Double) -> String {
  value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}

public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}
