/// The one rule for a number setting, shared by the configuration file, a scenario's `config`
/// object and the daemon's own keys: plain decimal text (`30`, `0.5`, `-3`, `1e-07`; no hex, no
/// `inf`/`nan`, nothing after the number) within the key's range.
public struct SettingNumber: Sendable, Hashable {
  public let range: ClosedRange<Double>
  /// What the number counts, for the message: "seconds", "dB", "metres".
  public let unit: String
  /// A whole number only (counts).
  public let whole: Bool

  public init(_ range: ClosedRange<Double>, unit: String, whole: Bool = false) {
    self.range = range
    self.unit = unit
    self.whole = whole
  }

  /// "0.1 to 3600", as `etc/beaconbridge.conf` states each range.
  public var rangeText: String { "\(formatNumber(range.lowerBound)) to \(formatNumber(range.upperBound))" }

  /// "a number of seconds from 0.1 to 3600".
  public var rule: String {
    let what = whole ? "a whole number" : "a number"
    let of = unit.isEmpty ? "" : " of \(unit)"
    return "\(what)\(of) from \(formatNumber(range.lowerBound)) to \(formatNumber(range.upperBound))"
  }

  /// The number for `name`, or an error that names the key, quotes the value (cut short and
  /// escaped) and says the range: "exitTimeout "1e308" is out of range; set a number of seconds
  /// from 0.1 to 3600". The text is the number as written: read once into the nearest Double, a
  /// whole number checked digit by digit, and a number too small for a Double to tell from 0
  /// refused rather than taken as 0.
  public func parse(_ name: String, _ text: String) throws(ConfigurationError) -> Double {
    guard text.utf8.count <= Self.maximumLength else {
      throw ConfigurationError(
        "\(name) \(text.quotedForMessage) is longer than \(Self.maximumLength) characters; set \(rule)")
    }
    guard let value = Self.decimal(text) else {
      throw ConfigurationError(
        "\(name) \(text.quotedForMessage) is not \(whole ? "a plain whole number" : "a plain decimal number"); set \(rule)"
      )
    }
    if whole {
      switch NumberLiteral.exactInteger(text) {
      case .integer: break
      case .notWhole:
        throw ConfigurationError("\(name) \(text.quotedForMessage) is not a whole number; set \(rule)")
      case .tooLarge, .notNumber:
        throw ConfigurationError("\(name) \(text.quotedForMessage) is out of range; set \(rule)")
      }
    }
    guard value.isFinite, range.contains(value) else {
      throw ConfigurationError("\(name) \(text.quotedForMessage) is out of range; set \(rule)")
    }
    if value == 0, NumberLiteral.isNonZero(text) {
      throw ConfigurationError(
        "\(name) \(text.quotedForMessage) is too small to tell from 0; set 0 or \(rule)")
    }
    return value
  }

  /// The longest number text read: more digits than a Double holds, many times over.
  public static let maximumLength = 64

  /// A message for a value set in code that is out of range, or nil.
  public func problem(_ name: String, _ value: Double) -> String? {
    range.contains(value) && (!whole || value == value.rounded())
      ? nil : "\(name) is \(formatNumber(value)); set \(rule)"
  }

  /// Plain decimal text only: an optional sign, digits with an optional fraction, an optional
  /// exponent. The result may be infinite (`1e400`), which no range holds.
  static func decimal(_ text: String) -> Double? {
    guard NumberLiteral.Parts(text) != nil else { return nil }
    return Double(text)
  }
}
