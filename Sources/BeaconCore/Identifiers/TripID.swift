/// A trip's ID, as the host's trip recorder names it: 1 to 128 visible ASCII characters (letters,
/// digits and punctuation, no space).
///
/// It becomes the `Idempotency-Key` HTTP header (`<tripId>#<sequence>`), a journal line and a D-Bus
/// string, so the rule is the one an HTTP header value can carry unchanged: a CR or LF in a trip
/// ID once forged journal lines and sent an upload without its key.
public struct TripID: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
  public let rawValue: String

  /// The longest trip ID, in bytes.
  public static let maxBytes = 128
  static let rule =
    "a trip ID is 1 to 128 visible ASCII characters: letters, digits and punctuation, no spaces"

  public init(_ text: String) throws(IdentifierError) {
    try IdentifierText.check(
      text, field: "trip ID", maxBytes: Self.maxBytes, allowed: { $0.value > 0x20 && $0.value < 0x7F },
      rule: Self.rule)
    rawValue = text
  }

  /// For literals in code and tests; an invalid literal is a programming error. Note that
  /// `TripID("…")` with a string literal is this initializer, not the throwing one: build from
  /// input with a `String` value.
  public init(stringLiteral value: String) {
    do { try self.init(value) } catch { preconditionFailure(error.description) }
  }

  public var description: String { rawValue }
  public static func < (a: TripID, b: TripID) -> Bool { a.rawValue < b.rawValue }
}
