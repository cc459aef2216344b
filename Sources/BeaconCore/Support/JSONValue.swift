#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A JSON value that keeps every field of what it was decoded from.
///
/// Trip events are forwarded with all of their fields, whatever the recorder put in them, so the
/// core carries them as `JSONValue` rather than as a fixed struct.
public enum JSONValue: Hashable, Sendable {
  case null
  case bool(Bool)
  case int(Int64)
  case double(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])
  /// JSON text kept as it was received and written out unchanged: a number's literal
  /// (`JSONText.parse` keeps every number so: `18446744073709551615`, `1e400`, `-0`, `1.10`), or a
  /// whole value's text (`TripEvent.json`). It must be one valid JSON value.
  case raw(String)

  public subscript(key: String) -> JSONValue? {
    if case .object(let fields) = self { return fields[key] }
    return nil
  }

  public var stringValue: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  public var doubleValue: Double? {
    switch self {
    case .int(let i): return Double(i)
    case .double(let d): return d
    case .raw(let text) where isNumberText(text): return Double(text)
    default: return nil
    }
  }

  /// The whole number the value is exactly, or nil: a literal is read digit by digit, so
  /// `7.0000000000000001` is not 7 and `1e2` is 100 (`exactInteger` says why not).
  public var intValue: Int64? {
    if case .integer(let i) = exactInteger { return i }
    return nil
  }

  /// Whether the value is exactly a whole number in Int64's range, and if not, why.
  public enum ExactInteger: Hashable, Sendable {
    case integer(Int64)
    /// A number with a fraction (`1.5`, `1e-3`).
    case notWhole
    /// A whole number past Int64's range (`1e19`, `1e400`, `-9223372036854775809`).
    case tooLarge
    /// Not a number at all.
    case notNumber
  }

  public var exactInteger: ExactInteger {
    switch self {
    case .int(let i): return .integer(i)
    case .double(let d):
      guard d.isFinite, d.rounded() == d else { return d.isFinite ? .notWhole : .tooLarge }
      return Int64(exactly: d).map(ExactInteger.integer) ?? .tooLarge
    case .raw(let text) where isNumberText(text): return NumberLiteral.exactInteger(text)
    default: return .notNumber
    }
  }

  /// A number's text as it came: a literal kept raw, or the shortest text that reads back as
  /// the same value (`1.5e-06`, never rounded); nil for anything else.
  public var numberText: String? {
    switch self {
    case .int(let i): return String(i)
    case .double(let d): return d.isFinite ? "\(d)" : nil
    case .raw(let text) where isNumberText(text): return text
    default: return nil
    }
  }

  /// Whether raw text is a number's literal (its first character says so: JSON text is checked
  /// when it is read).
  private func isNumberText(_ text: String) -> Bool {
    guard let first = text.utf8.first else { return false }
    return first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
  }

  public var objectValue: [String: JSONValue]? {
    if case .object(let o) = self { return o }
    return nil
  }

  public var arrayValue: [JSONValue]? {
    if case .array(let a) = self { return a }
    return nil
  }

  /// The JSON type's name, for error messages.
  public var typeName: String {
    switch self {
    case .null: "null"
    case .bool: "boolean"
    case .int, .double: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    case .raw(let text):
      switch text.utf8.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
      case UInt8(ascii: "{"): "object"
      case UInt8(ascii: "["): "array"
      case UInt8(ascii: "\""): "string"
      case UInt8(ascii: "t"), UInt8(ascii: "f"): "boolean"
      case UInt8(ascii: "n"): "null"
      default: "number"
      }
    }
  }
}

extension JSONValue: Codable {
  public init(from decoder: any Decoder) throws {
    if var array = try? decoder.unkeyedContainer() {
      var values: [JSONValue] = []
      while !array.isAtEnd { values.append(try array.decode(JSONValue.self)) }
      self = .array(values)
      return
    }
    if let object = try? decoder.container(keyedBy: AnyKey.self) {
      var fields: [String: JSONValue] = [:]
      for key in object.allKeys { fields[key.stringValue] = try object.decode(JSONValue.self, forKey: key) }
      self = .object(fields)
      return
    }
    let single = try decoder.singleValueContainer()
    if single.decodeNil() {
      self = .null
    } else if let b = try? single.decode(Bool.self) {
      self = .bool(b)
    } else if let i = try? single.decode(Int64.self) {
      self = .int(i)
    } else if let d = try? single.decode(Double.self) {
      self = .double(d)
    } else {
      self = .string(try single.decode(String.self))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    switch self {
    case .null:
      var c = encoder.singleValueContainer()
      try c.encodeNil()
    case .bool(let b):
      var c = encoder.singleValueContainer()
      try c.encode(b)
    case .int(let i):
      var c = encoder.singleValueContainer()
      try c.encode(i)
    case .double(let d):
      var c = encoder.singleValueContainer()
      try c.encode(d)
    case .string(let s):
      var c = encoder.singleValueContainer()
      try c.encode(s)
    case .array(let a):
      var c = encoder.unkeyedContainer()
      for v in a { try c.encode(v) }
    case .object(let o):
      var c = encoder.container(keyedBy: AnyKey.self)
      for (k, v) in o { try c.encode(v, forKey: AnyKey(k)) }
    case .raw(let text):
      // An encoder takes values, not text: the value the text stands for.
      try ((try? JSONText.parse(Array(text.utf8))) ?? .string(text)).decodedNumbers.encode(to: encoder)
    }
  }

  /// The value with raw number literals as `.int` or `.double` (for an `Encoder`, which cannot
  /// take text).
  var decodedNumbers: JSONValue {
    switch self {
    case .raw(let text): if let i = Int64(text) { .int(i) } else { doubleValue.map(JSONValue.double) ?? self }
    case .array(let a): .array(a.map(\.decodedNumbers))
    case .object(let o): .object(o.mapValues(\.decodedNumbers))
    default: self
    }
  }

  private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ s: String) { stringValue = s }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
  }
}

extension JSONValue {
  /// Decodes one JSON document with `JSONDecoder`: for what this program wrote itself (the
  /// daemon's D-Bus replies, its store). What comes from outside (a scenario, a desired
  /// document, trip events, G-Zone payloads) is read by `JSONText`, which keeps numbers as
  /// written and refuses a repeated key.
  public static func parse(_ data: Data) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: data)
  }

  /// Compact JSON with object keys sorted, so the same value always prints the same bytes.
  public var compactText: String {
    var out = ""
    JSONWriter.write(self, to: &out)
    return out
  }
}

/// Writes compact, deterministic JSON.
public enum JSONWriter {
  public static func write(_ value: JSONValue, to out: inout String) {
    switch value {
    case .null: out += "null"
    case .bool(let b): out += b ? "true" : "false"
    case .int(let i): out += String(i)
    case .double(let d): writeNumber(d, to: &out)
    case .string(let s): writeString(s, to: &out)
    case .array(let a):
      out += "["
      for (i, v) in a.enumerated() {
        if i > 0 { out += "," }
        write(v, to: &out)
      }
      out += "]"
    case .object(let o):
      writeObject(o.sorted { $0.key < $1.key }, to: &out)
    case .raw(let text): out += text
    }
  }

  /// Writes an object whose keys keep the given order (used for output lines that lead with
  /// `at` and `type`).
  public static func writeObject(_ fields: [(key: String, value: JSONValue)], to out: inout String) {
    out += "{"
    for (i, field) in fields.enumerated() {
      if i > 0 { out += "," }
      writeString(field.key, to: &out)
      out += ":"
      write(field.value, to: &out)
    }
    out += "}"
  }

  /// Numbers print in their shortest form; integral values print without a fraction, and values
  /// are rounded to microseconds' precision so that virtual-time sums (0.1 + 0.2) print stably.
  ///
  /// JSON has no infinity or NaN: a non-finite number prints as `null`, the one rule for every
  /// JSON this program writes (docs/ARCHITECTURE.md). Values too large to round (past 1e302)
  /// print as they are, so rounding never makes one infinite.
  public static func writeNumber(_ d: Double, to out: inout String) {
    guard d.isFinite else {
      out += "null"
      return
    }
    // Beyond 1e15 there is no fraction left to round, and d * 1e6 could overflow to inf.
    let rounded = abs(d) < 1e15 ? (d * 1_000_000).rounded() / 1_000_000 : d
    if rounded == rounded.rounded(), abs(rounded) < 9e15 {
      out += String(Int64(rounded))
    } else {
      out += "\(rounded)"
    }
  }

  public static func writeString(_ s: String, to out: inout String) {
    out += "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    out += "\""
  }
}

/// Reads a decimal literal (JSON's grammar, and a leading `+` for the configuration file's
/// numbers) exactly, without going through a Double.
public enum NumberLiteral {
  /// Whether `text` is exactly a whole number within Int64. Text that is not a decimal literal
  /// is `.notNumber`.
  public static func exactInteger(_ text: String) -> JSONValue.ExactInteger {
    guard let parts = Parts(text) else { return .notNumber }
    guard let first = parts.digits.firstIndex(where: { $0 != UInt8(ascii: "0") }) else { return .integer(0) }
    var digits = parts.digits[first...]
    var exponent = parts.exponent
    while let last = digits.last, last == UInt8(ascii: "0") {
      digits.removeLast()
      exponent += 1
    }
    guard exponent >= 0 else { return .notWhole }
    // Int64 holds at most 19 digits.
    guard digits.count + exponent <= 19 else { return .tooLarge }
    var magnitude: UInt64 = 0
    for digit in digits { magnitude = magnitude * 10 + UInt64(digit - UInt8(ascii: "0")) }
    for _ in 0..<exponent { magnitude *= 10 }
    if parts.negative {
      guard magnitude <= UInt64(Int64.max) + 1 else { return .tooLarge }
      return .integer(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
    }
    guard magnitude <= UInt64(Int64.max) else { return .tooLarge }
    return .integer(Int64(magnitude))
  }

  /// Whether a decimal literal has a digit other than 0: a number that is not zero, however
  /// small (`1e-400` reads as 0 as a Double, but is not 0).
  public static func isNonZero(_ text: String) -> Bool {
    Parts(text)?.digits.contains { $0 != UInt8(ascii: "0") } ?? false
  }

  /// The literal's sign, its digits (the integer part's, then the fraction's) and the power of
  /// ten they are scaled by.
  struct Parts {
    var negative = false
    var digits: [UInt8] = []
    var exponent = 0

    init?(_ text: String) {
      let bytes = Array(text.utf8)
      var i = 0
      func isDigit(_ i: Int) -> Bool { i < bytes.count && (0x30...0x39).contains(bytes[i]) }
      if i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
        negative = bytes[i] == UInt8(ascii: "-")
        i += 1
      }
      while isDigit(i) {
        digits.append(bytes[i])
        i += 1
      }
      var fraction = 0
      if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
        i += 1
        while isDigit(i) {
          digits.append(bytes[i])
          fraction += 1
          i += 1
        }
      }
      guard !digits.isEmpty else { return nil }
      var power = 0
      if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
        i += 1
        var negativePower = false
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
          negativePower = bytes[i] == UInt8(ascii: "-")
          i += 1
        }
        guard isDigit(i) else { return nil }
        // Saturated: any exponent past a million is past every range read here.
        while isDigit(i) {
          power = min(power * 10 + Int(bytes[i] - 0x30), 1_000_000)
          i += 1
        }
        if negativePower { power = -power }
      }
      guard i == bytes.count else { return nil }
      exponent = power - fraction
    }
  }
}
