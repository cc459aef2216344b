/// What the backend knows a vehicle by: a unit serial number or driver tag ID. 1 to 128 bytes of
/// UTF-8, printable (no control, format or line-separator characters), not starting or ending
/// with a space.
public struct DeviceID: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
  public let rawValue: String

  /// The longest device ID, in bytes of UTF-8.
  public static let maxBytes = 128
  static let rule = "a device ID is 1 to 128 bytes of printable text, not starting or ending with a space"

  public init(_ text: String) throws(IdentifierError) {
    try IdentifierText.check(
      text, field: "device ID", maxBytes: Self.maxBytes, allowed: { _ in true }, rule: Self.rule)
    rawValue = text
  }

  /// For literals in code and tests; an invalid literal is a programming error. Note that
  /// `DeviceID("…")` with a string literal is this initializer, not the throwing one: build from
  /// input with a `String` value.
  public init(stringLiteral value: String) {
    do { try self.init(value) } catch { preconditionFailure(error.description) }
  }

  public var description: String { rawValue }
  public static func < (a: DeviceID, b: DeviceID) -> Bool { a.rawValue < b.rawValue }
}

/// A device ID is its text; one that breaks the rule does not decode.
extension DeviceID: Codable {
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    do { try self.init(try container.decode(String.self)) } catch let error as IdentifierError {
      throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(rawValue)
  }
}

/// A pairing's label, for people ("van 7"): the device ID's text rule, up to 128 bytes.
public enum PairingLabel {
  public static func check(_ text: String) throws(IdentifierError) {
    try IdentifierText.check(
      text, field: "label", maxBytes: 128, allowed: { _ in true },
      rule: "a label is 1 to 128 bytes of printable text, not starting or ending with a space")
  }
}
