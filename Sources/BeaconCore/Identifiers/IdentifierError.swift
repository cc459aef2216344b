/// Why a value is not a valid identifier. The message names the field, quotes the value (cut
/// short, control characters escaped) and says the rule, so every door (CLI, D-Bus, configuration
/// file, scenario, upload) reports the same sentence; each door adds only where the value was.
public struct IdentifierError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What the value was meant to be, e.g. "trip ID".
  public var field: String
  /// The value as it will be shown: quoted, cut short and escaped (`quotedForMessage`).
  public var value: String
  /// What is wrong and what the rule is.
  public var rule: String

  public init(field: String, value: String, rule: String) {
    self.field = field
    self.value = value.quotedForMessage
    self.rule = rule
  }

  public var description: String { "\(field) \(value) \(rule)" }
}

extension String {
  /// The string with control, format and line-separator characters escaped (`\n`, `\u{1B}`), so
  /// that it stays one line of a log; the string itself when it has none.
  public var escapingControlCharacters: String {
    guard unicodeScalars.contains(where: IdentifierText.isInvisible) else { return self }
    var out = ""
    for scalar in unicodeScalars { Self.appendEscaped(scalar, to: &out) }
    return out
  }

  /// The text of a message as a terminal or the journal may show it: every control character
  /// (C0, DEL, C1) and every format character (the bidi controls U+202A–U+202E, U+2066–U+2069,
  /// U+200E, U+200F, U+061C among them) escaped as `escapingControlCharacters` does, except the
  /// line feeds that end its lines. Every line the CLI writes to stderr passes through here, so
  /// a path or a payload value echoed in a message cannot move the cursor, recolour the terminal
  /// or reorder what the reader sees.
  public var escapingControlCharactersExceptNewlines: String {
    guard unicodeScalars.contains(where: { $0 != "\n" && IdentifierText.isInvisible($0) }) else {
      return self
    }
    var out = ""
    for scalar in unicodeScalars {
      if scalar == "\n" { out.unicodeScalars.append(scalar) } else { Self.appendEscaped(scalar, to: &out) }
    }
    return out
  }

  /// The longest a value is echoed in an error message, in characters.
  public static let messageQuoteLimit = 40

  /// The string in double quotes for an error message: at most 40 characters (then "…"), with
  /// control, format and line-separator characters, quotes and backslashes escaped, so that a bad
  /// value can neither forge a log line nor fill the journal.
  public var quotedForMessage: String {
    var out = "\""
    for (count, scalar) in unicodeScalars.enumerated() {
      if count == Self.messageQuoteLimit {
        out += "…"
        break
      }
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      default: Self.appendEscaped(scalar, to: &out)
      }
    }
    return out + "\""
  }

  /// One scalar, escaped when it cannot be shown on a line of its own.
  private static func appendEscaped(_ scalar: Unicode.Scalar, to out: inout String) {
    switch scalar {
    case "\n": out += "\\n"
    case "\r": out += "\\r"
    case "\t": out += "\\t"
    case "\0": out += "\\0"
    default:
      if IdentifierText.isInvisible(scalar) {
        out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
  }
}

extension Unicode.Scalar {
  /// "U+000D": how messages name a character that cannot be shown.
  public var codePointText: String {
    let hex = String(value, radix: 16, uppercase: true)
    return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
  }
}

/// The text rules the identifier types share.
enum IdentifierText {
  /// Control (C0, DEL, C1), format (bidi overrides, zero-width), line and paragraph separators,
  /// private-use and unassigned code points: characters a person cannot see or type reliably, and
  /// that can break a log line, a header or a terminal.
  static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: true
    default: false
    }
  }

  static func codePoint(_ scalar: Unicode.Scalar) -> String { scalar.codePointText }

  /// Checks printable text: not empty, at most `maxBytes` of UTF-8, no invisible characters, no
  /// space at either end. `rule` is the sentence that ends every refusal.
  static func check(
    _ text: String, field: String, maxBytes: Int, allowed: (Unicode.Scalar) -> Bool, rule: String
  ) throws(IdentifierError) {
    func fail(_ what: String) -> IdentifierError {
      IdentifierError(field: field, value: text, rule: "\(what); \(rule)")
    }
    guard !text.isEmpty else { throw IdentifierError(field: field, value: text, rule: "is empty; \(rule)") }
    let bytes = text.utf8.count
    guard bytes <= maxBytes else { throw fail("is \(bytes) bytes long") }
    for scalar in text.unicodeScalars {
      if isInvisible(scalar) {
        throw fail("contains the control or invisible character \(codePoint(scalar))")
      }
      if !allowed(scalar) { throw fail("contains \(codePoint(scalar))") }
    }
    if let first = text.unicodeScalars.first, let last = text.unicodeScalars.last,
      first.properties.isWhitespace || last.properties.isWhitespace
    {
      throw fail("starts or ends with a space")
    }
  }
}

/// A value type that is built from text only through its rule: `TripID`, `DeviceID`,
/// `HCIDeviceID`. Each door builds one with `init(_:)` and reports the `IdentifierError`.
public protocol ValidatedIdentifier: Hashable, Sendable {
  init(_ text: String) throws(IdentifierError)
}

extension TripID: ValidatedIdentifier {}
extension DeviceID: ValidatedIdentifier {}
extension HCIDeviceID: ValidatedIdentifier {}
