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
  /// from 0.1 to 3600".
  public func parse(_ name: String, _ text: String) throws(ConfigurationError) -> Double {
    guard let value = Self.decimal(text), !whole || value == value.rounded() else {
      throw ConfigurationError(
        "\(name) \(text.quotedForMessage) is not \(whole ? "a plain whole number" : "a plain decimal number"); set \(rule)"
      )
    }
    guard range.contains(value) else {
      throw ConfigurationError("\(name) \(text.quotedForMessage) is out of range; set \(rule)")
    }
    return value
  }

  /// A message for a value set in code that is out of range, or nil.
  public func problem(_ name: String, _ value: Double) -> String? {
    range.contains(value) && (!whole || value == value.rounded())
      ? nil : "\(name) is \(formatNumber(value)); set \(rule)"
  }

  /// Plain decimal text only: an optional sign, digits with an optional fraction, an optional
  /// exponent. At most 32 characters; the result is finite.
  static func decimal(_ text: String) -> Double? {
    let bytes = Array(text.utf8)
    guard !bytes.isEmpty, bytes.count <= 32 else { return nil }
    var i = 0
    func digits() -> Int {
      let start = i
      while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
      return i - start
    }
    if bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
    var mantissa = digits()
    if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
      i += 1
      mantissa += digits()
    }
    guard mantissa > 0 else { return nil }
    if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
      i += 1
      if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
      guard digits() > 0 else { return nil }
    }
    guard i == bytes.count, let value = Double(text), value.isFinite else { return nil }
    return value
  }
}
