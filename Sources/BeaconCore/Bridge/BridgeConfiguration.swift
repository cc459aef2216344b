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
  /// First retry delay after `postTripEventBatch` throws (seconds); doubles up to `postRetryMax`.
  public var postRetryInitial: Double = 1
  public var postRetryMax: Double = 60
  /// Each retry delay is spread by ± this fraction.
  public var postRetryJitter: Double = 0.2

  public init() {}

  /// One documented setting.
  public struct Key: Sendable {
    public let name: String
    public let summary: String
    let get: @Sendable (BridgeConfiguration) -> String
    let set: @Sendable (inout BridgeConfiguration, String) throws(ConfigurationError) -> Void
  }

  /// The settings, in documentation order.
  public static let keys: [Key] = [
    seconds("exitTimeout", "a beacon exits after this long unseen", \.presence.exitTimeout),
    fraction(
      "exitMissProbability", "a lossy beacon exits once silence this unlikely has passed",
      \.presence.exitMissProbability),
    seconds(
      "exitTimeoutMax", "a beacon exits at the latest after this long unseen", \.presence.exitTimeoutMax),
    seconds(
      "activeHold", "the active beacon is held this long after its last sighting", \.selector.activeHold),
    count(
      "dwellSightings", "sightings a paired beacon needs before it can become active",
      \.selector.dwellSightings),
    seconds("dwellSeconds", "time span those sightings must cover", \.selector.dwellSeconds),
    decibels("switchMargin", "dB stronger another candidate must be to take over", \.selector.switchMargin),
    seconds("switchSustain", "how long it must stay that much stronger", \.selector.switchSustain),
    seconds(
      "lateWindow", "how long after trip start a beacon may still resolve the trip", \.trips.lateWindow),
    Key(
      name: "unresolvedPolicy", summary: "hold or fallback: what happens to a trip no beacon resolved",
      get: { $0.trips.unresolvedPolicy.rawValue },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        guard let policy = UnresolvedPolicy(rawValue: text) else {
          throw ConfigurationError("unresolvedPolicy must be hold or fallback, not \"\(text)\"")
        }
        config.trips.unresolvedPolicy = policy
      }),
    optionalText(
      "fallbackDeviceId", "the device ID unresolved trips take under unresolvedPolicy=fallback",
      \.trips.fallbackDeviceId),
    optionalText(
      "deviceId", "smart mode: the device ID trips take when the host takes no beacon snapshot",
      \.trips.configuredDeviceId),
    Key(
      name: "rssiFilter", summary: "kalman, runningAverage or arma",
      get: { $0.presence.rssi.filter.rawValue },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        guard let kind = RSSIFilterKind(rawValue: text) else {
          throw ConfigurationError("rssiFilter must be kalman, runningAverage or arma, not \"\(text)\"")
        }
        config.presence.rssi.filter = kind
      }),
    decibels("kalmanSigma", "Kalman measurement noise σ, dB", \.presence.rssi.kalmanMeasurementSigma),
    decibels(
      "kalmanProcessNoise", "Kalman process noise, dB² per second",
      \.presence.rssi.kalmanProcessNoisePerSecond),
    seconds(
      "kalmanInterval", "the reading interval the Kalman noise stands for, seconds",
      \.presence.rssi.kalmanReferenceInterval),
    seconds("runningAverageWindow", "running-average window, seconds", \.presence.rssi.runningAverageWindow),
    fraction(
      "runningAverageTrim", "fraction trimmed at each end of the running average",
      \.presence.rssi.runningAverageTrim),
    fraction("armaCoefficient", "ARMA coefficient c", \.presence.rssi.armaCoefficient),
    seconds("armaInterval", "the interval one ARMA step stands for", \.presence.rssi.armaReferenceInterval),
    decibels(
      "distanceA", "curve-fit coefficient A (AltBeacon default 0.42093)", \.presence.distance.coefficientA),
    decibels(
      "distanceB", "curve-fit coefficient B (AltBeacon default 6.9476)", \.presence.distance.coefficientB),
    decibels(
      "distanceC", "curve-fit coefficient C (AltBeacon default 0.54992)", \.presence.distance.coefficientC),
    seconds(
      "immediateDistance", "metres under which a beacon is immediate", \.presence.distance.immediateWithin),
    seconds("nearDistance", "metres under which a beacon is near", \.presence.distance.nearWithin),
    seconds("postRetryInitial", "first retry delay after an upload failure", \.postRetryInitial),
    seconds("postRetryMax", "longest retry delay", \.postRetryMax),
    fraction("postRetryJitter", "each retry delay is spread by ± this fraction", \.postRetryJitter),
  ]

  public static func key(named name: String) -> Key? { keys.first { $0.name == name } }

  /// The configuration file section each setting lives in.
  public static func section(of name: String) -> String {
    switch name {
    case "dwellSightings", "dwellSeconds", "switchMargin", "switchSustain", "activeHold": "ActiveBeacon"
    case "lateWindow", "unresolvedPolicy", "fallbackDeviceId", "deviceId": "Trips"
    case "postRetryInitial", "postRetryMax", "postRetryJitter": "Upload"
    default: "Presence"
    }
  }

  /// Sets one key from its text form.
  public mutating func set(_ name: String, to text: String) throws(ConfigurationError) {
    guard let key = Self.key(named: name) else {
      let known = Self.keys.map(\.name).joined(separator: ", ")
      throw ConfigurationError("unknown setting \"\(name)\" (known: \(known))")
    }
    try key.set(&self, text)
  }

  public func value(of name: String) -> String? { Self.key(named: name)?.get(self) }

  /// Every problem with the values together, or nothing. The bridge refuses to arm on any.
  public func problems() -> [String] {
    var out: [String] = []
    if presence.exitTimeout <= 0 { out.append("exitTimeout must be above 0") }
    if presence.exitTimeoutMax < presence.exitTimeout {
      out.append("exitTimeoutMax must be at least exitTimeout")
    }
    if !(presence.exitMissProbability > 0 && presence.exitMissProbability < 1) {
      out.append("exitMissProbability must be between 0 and 1")
    }
    if selector.activeHold < 0 { out.append("activeHold must not be negative") }
    if selector.dwellSightings < 1 { out.append("dwellSightings must be at least 1") }
    if trips.lateWindow < 0 { out.append("lateWindow must not be negative") }
    if trips.unresolvedPolicy == .fallback, (trips.fallbackDeviceId ?? "").isEmpty {
      out.append("unresolvedPolicy=fallback needs a fallbackDeviceId")
    }
    if presence.rssi.kalmanMeasurementSigma <= 0 { out.append("kalmanSigma must be above 0") }
    if presence.rssi.kalmanReferenceInterval <= 0 { out.append("kalmanInterval must be above 0") }
    if !(0..<0.5).contains(presence.rssi.runningAverageTrim) {
      out.append("runningAverageTrim must be in [0, 0.5)")
    }
    if !(0...1).contains(presence.rssi.armaCoefficient) || presence.rssi.armaCoefficient == 0 {
      out.append("armaCoefficient must be in (0, 1]")
    }
    if presence.distance.immediateWithin >= presence.distance.nearWithin {
      out.append("immediateDistance must be below nearDistance")
    }
    if postRetryInitial <= 0 || postRetryMax < postRetryInitial {
      out.append("postRetryInitial must be above 0 and at most postRetryMax")
    }
    if !(0...0.9).contains(postRetryJitter) { out.append("postRetryJitter must be between 0 and 0.9") }
    return out
  }

  private static func number(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Double> & Sendable,
    unit: String, min: Double
  ) -> Key {
    Key(
      name: name, summary: summary, get: { formatNumber($0[keyPath: path]) },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        guard let value = Double(text.trimmedWhitespace), value.isFinite else {
          throw ConfigurationError("\(name) must be a number (\(unit)), not \"\(text)\"")
        }
        guard value >= min else { throw ConfigurationError("\(name) must be at least \(min), not \(text)") }
        config[keyPath: path] = value
      })
  }

  private static func seconds(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Double> & Sendable
  ) -> Key { number(name, summary, path, unit: "seconds", min: 0) }

  private static func decibels(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Double> & Sendable
  ) -> Key { number(name, summary, path, unit: "a decimal", min: -.greatestFiniteMagnitude) }

  private static func fraction(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Double> & Sendable
  ) -> Key { number(name, summary, path, unit: "a fraction", min: 0) }

  private static func count(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, Int> & Sendable
  ) -> Key {
    Key(
      name: name, summary: summary, get: { String($0[keyPath: path]) },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        guard let value = Int(text.trimmedWhitespace), value >= 0 else {
          throw ConfigurationError("\(name) must be a whole number, not \"\(text)\"")
        }
        config[keyPath: path] = value
      })
  }

  private static func optionalText(
    _ name: String, _ summary: String, _ path: WritableKeyPath<BridgeConfiguration, String?> & Sendable
  ) -> Key {
    Key(
      name: name, summary: summary, get: { $0[keyPath: path] ?? "" },
      set: { (config: inout BridgeConfiguration, text: String) throws(ConfigurationError) in
        let trimmed = text.trimmedWhitespace
        config[keyPath: path] = trimmed.isEmpty ? nil : trimmed
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
