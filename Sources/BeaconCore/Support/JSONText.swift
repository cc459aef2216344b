/// A strict JSON reader (RFC 8259) that keeps what `JSONDecoder` loses, so that bytes leave as
/// they came: a number that would not be written back as the same text is kept as its
/// literal (`.raw`), so `18446744073709551615`, `1e400`, `-0` and `1.10` are written back
/// unchanged; and an array's elements can be had with their exact text (`elements(ofArray:)`),
/// escapes and all.
///
/// Work is linear in the input; nesting deeper than `maximumDepth` is refused rather than
/// recursed into, so a hostile document cannot exhaust the stack.
///
/// A key that appears twice in one object is refused, naming it (`Error.duplicateKey`): RFC 8259
/// leaves the meaning of such an object to the reader, and readers differ (the first wins in
/// one, the last in another), so a document the box acts on must say one thing. Only the
/// elements of `elements(ofArray:)` (trip events, opaque to the box and passed on byte for
/// byte) may repeat a key, except the keys the box itself reads there (`interpreted`).
public enum JSONText {
  /// Deeper nesting is refused.
  public static let maximumDepth = 512

  public struct Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
    /// Where the problem is, counted in bytes from 0.
    public var offset: Int
    public var problem: String
    /// The key, when the text is refused because an object has it twice.
    public var duplicateKey: String?
    /// Whether the text is refused for nesting deeper than `maximumDepth`.
    public var tooDeep = false

    public init(offset: Int, problem: String, duplicateKey: String? = nil, tooDeep: Bool = false) {
      self.offset = offset
      self.problem = problem
      self.duplicateKey = duplicateKey
      self.tooDeep = tooDeep
    }

    public var description: String {
      duplicateKey == nil ? "invalid JSON at byte \(offset): \(problem)" : "\(problem) (at byte \(offset))"
    }
  }

  /// Parses one JSON document; a number is `.raw` unless its value writes back as the same text.
  /// A key repeated in any object is refused.
  public static func parse(_ bytes: [UInt8]) throws(Error) -> JSONValue {
    try bytes.withUnsafeBufferPointer { buffer throws(Error) in
      var reader = Reader(bytes: buffer, repeatable: nil)
      let value = try reader.document { reader throws(Error) in try reader.value(depth: 0) }
      return value
    }
  }

  /// Parses a JSON array and returns each element with its exact text, as it appeared. An
  /// element's objects may repeat a key (the value keeps the last; the text keeps them all),
  /// except a key of `interpreted` in the element itself, which the caller reads.
  public static func elements(ofArray bytes: [UInt8], interpreted: Set<String> = []) throws(Error) -> [(
    value: JSONValue, text: String
  )] {
    try bytes.withUnsafeBufferPointer { buffer throws(Error) in
      var reader = Reader(bytes: buffer, repeatable: interpreted)
      return try reader.document { reader throws(Error) in try reader.elementsWithText() }
    }
  }

  private struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    /// nil: no key may repeat. Otherwise keys may repeat in an array's elements (depth 1 and
    /// below), but for these keys in an element itself (depth 1).
    let repeatable: Set<String>?

    init(bytes: UnsafeBufferPointer<UInt8>, repeatable: Set<String>?) {
      self.bytes = bytes
      self.repeatable = repeatable
    }

    func fail(_ problem: String, at offset: Int? = nil) -> Error {
      Error(offset: offset ?? index, problem: problem)
    }

    mutating func document<T>(_ body: (inout Reader) throws(Error) -> T) throws(Error) -> T {
      skipSpace()
      let result = try body(&self)
      skipSpace()
      guard index == bytes.count else { throw fail("unexpected \(describe(bytes[index])) after the value") }
      return result
    }

    mutating func skipSpace() {
      while index < bytes.count {
        switch bytes[index] {
        case 0x20, 0x09, 0x0A, 0x0D: index += 1
        default: return
        }
      }
    }

    func describe(_ byte: UInt8) -> String {
      (0x21...0x7E).contains(byte)
        ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(Error) {
      guard index < bytes.count else { throw fail("the text ends where \(what) was expected") }
      guard bytes[index] == byte else { throw fail("expected \(what), found \(describe(bytes[index]))") }
      index += 1
    }

    mutating func elementsWithText() throws(Error) -> [(value: JSONValue, text: String)] {
      guard index < bytes.count, bytes[index] == UInt8(ascii: "[") else {
        throw fail(
          index < bytes.count ? "expected an array, found \(describe(bytes[index]))" : "the text is empty")
      }
      index += 1
      var out: [(value: JSONValue, text: String)] = []
      skipSpace()
      if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
        index += 1
        return out
      }
      while true {
        skipSpace()
        let start = index
        let value = try self.value(depth: 1)
        out.append((value, try text(from: start, to: index)))
        skipSpace()
        guard index < bytes.count else { throw fail("the text ends inside an array") }
        if bytes[index] == UInt8(ascii: ",") {
          index += 1
          continue
        }
        try expect(UInt8(ascii: "]"), "',' or ']'")
        return out
      }
    }

    /// The input from `start` to `end`, which must be UTF-8.
    func text(from start: Int, to end: Int) throws(Error) -> String {
      guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
      else {
        throw fail("the text is not UTF-8", at: start)
      }
      return text
    }

    mutating func value(depth: Int) throws(Error) -> JSONValue {
      guard depth <= JSONText.maximumDepth else {
        throw Error(offset: index, problem: "nested more than \(JSONText.maximumDepth) deep", tooDeep: true)
      }
      skipSpace()
      guard index < bytes.count else { throw fail("the text ends where a value was expected") }
      switch bytes[index] {
      case UInt8(ascii: "{"): return try object(depth: depth)
      case UInt8(ascii: "["): return try array(depth: depth)
      case UInt8(ascii: "\""): return .string(try string())
      case UInt8(ascii: "t"): return try literal("true", .bool(true))
      case UInt8(ascii: "f"): return try literal("false", .bool(false))
      case UInt8(ascii: "n"): return try literal("null", .null)
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return Self.number(try number())
      case let byte: throw fail("expected a value, found \(describe(byte))")
      }
    }

    mutating func literal(_ word: StaticString, _ value: JSONValue) throws(Error) -> JSONValue {
      let start = index
      for byte in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
        guard index < bytes.count, bytes[index] == byte else { throw fail("expected \(word)", at: start) }
        index += 1
      }
      return value
    }

    mutating func object(depth: Int) throws(Error) -> JSONValue {
      index += 1
      var fields: [String: JSONValue] = [:]
      skipSpace()
      if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
        index += 1
        return .object(fields)
      }
      while true {
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
          throw fail(
            index < bytes.count
              ? "expected a key in quotes, found \(describe(bytes[index]))" : "the text ends inside an object"
          )
        }
        let keyStart = index
        let key = try string()
        skipSpace()
        try expect(UInt8(ascii: ":"), "':'")
        // One hash lookup, as the assignment was: the old value says the key came before.
        if fields.updateValue(try value(depth: depth + 1), forKey: key) != nil,
          repeatable.map({ depth == 1 && $0.contains(key) }) ?? true
        {
          throw Error(
            offset: keyStart,
            problem:
              "the key \(key.quotedForMessage) appears twice in one object, and readers differ on which one counts; keep one",
            duplicateKey: key)
        }
        guard try another(or: UInt8(ascii: "}"), "',' or '}'", inside: "an object") else {
          return .object(fields)
        }
      }
    }

    mutating func array(depth: Int) throws(Error) -> JSONValue {
      index += 1
      var items: [JSONValue] = []
      skipSpace()
      if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
        index += 1
        return .array(items)
      }
      while true {
        items.append(try value(depth: depth + 1))
        guard try another(or: UInt8(ascii: "]"), "',' or ']'", inside: "an array") else {
          return .array(items)
        }
      }
    }

    /// After an object's member or an array's element: true past a ',' (another follows), false
    /// past `close`; anything else, or the end of the text, is refused.
    mutating func another(or close: UInt8, _ expected: String, inside container: String) throws(Error) -> Bool
    {
      skipSpace()
      guard index < bytes.count else { throw fail("the text ends inside \(container)") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
        return true
      }
      try expect(close, expected)
      return false
    }

    /// A number as `.int` or `.double` when `JSONWriter` writes that value back as the same
    /// text (`42`, `0.41`), so that values compare as they always did; otherwise as `.raw` text
    /// (`18446744073709551615`, `1e400`, `-0`, `1.10`), which is written back unchanged.
    static func number(_ text: String) -> JSONValue {
      if let i = Int64(text), String(i) == text { return .int(i) }
      if let d = Double(text), d.isFinite {
        var written = ""
        JSONWriter.writeNumber(d, to: &written)
        if written == text { return .double(d) }
      }
      return .raw(text)
    }

    /// A number's literal text, checked against JSON's grammar.
    mutating func number() throws(Error) -> String {
      let start = index
      func digit(_ i: Int) -> Bool { i < bytes.count && (0x30...0x39).contains(bytes[i]) }
      if bytes[index] == UInt8(ascii: "-") { index += 1 }
      guard digit(index) else { throw fail("a number needs a digit here") }
      if bytes[index] == UInt8(ascii: "0") {
        index += 1
        if digit(index) { throw fail("a number must not have a leading zero", at: start) }
      } else {
        while digit(index) { index += 1 }
      }
      if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
        index += 1
        guard digit(index) else { throw fail("a number needs a digit after '.'") }
        while digit(index) { index += 1 }
      }
      if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
        index += 1
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
          index += 1
        }
        guard digit(index) else { throw fail("a number needs a digit in its exponent") }
        while digit(index) { index += 1 }
      }
      return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// A string's value, escapes decoded; the opening quote is at `index`.
    mutating func string() throws(Error) -> String {
      let start = index
      index += 1
      var scalars = String.UnicodeScalarView()
      var runStart = index
      func flush(_ reader: Reader, upTo end: Int) throws(Error) {
        guard end > runStart else { return }
        guard
          let run = String(
            validating: UnsafeBufferPointer(rebasing: reader.bytes[runStart..<end]), as: UTF8.self)
        else { throw reader.fail("a string is not UTF-8", at: runStart) }
        scalars.append(contentsOf: run.unicodeScalars)
      }
      while true {
        guard index < bytes.count else { throw fail("the text ends inside a string", at: start) }
        let byte = bytes[index]
        if byte == UInt8(ascii: "\"") {
          try flush(self, upTo: index)
          index += 1
          return String(scalars)
        }
        if byte < 0x20 { throw fail("a control character (\(describe(byte))) must be escaped in a string") }
        guard byte == UInt8(ascii: "\\") else {
          index += 1
          continue
        }
        try flush(self, upTo: index)
        index += 1
        guard index < bytes.count else { throw fail("the text ends inside a string", at: start) }
        let escape = bytes[index]
        index += 1
        switch escape {
        case UInt8(ascii: "\""): scalars.append("\"")
        case UInt8(ascii: "\\"): scalars.append("\\")
        case UInt8(ascii: "/"): scalars.append("/")
        case UInt8(ascii: "b"): scalars.append("\u{08}")
        case UInt8(ascii: "f"): scalars.append("\u{0C}")
        case UInt8(ascii: "n"): scalars.append("\n")
        case UInt8(ascii: "r"): scalars.append("\r")
        case UInt8(ascii: "t"): scalars.append("\t")
        case UInt8(ascii: "u"):
          let unit = try hex4()
          if (0xD800...0xDBFF).contains(unit) {
            // A high surrogate must be followed by an escaped low one.
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
              bytes[index + 1] == UInt8(ascii: "u")
            else {
              throw fail("a \\u\(String(unit, radix: 16)) high surrogate has no low surrogate after it")
            }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else {
              throw fail("\\u\(String(low, radix: 16)) is not a low surrogate")
            }
            scalars.append(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!)
          } else if let scalar = Unicode.Scalar(unit) {
            scalars.append(scalar)
          } else {
            throw fail("\\u\(String(unit, radix: 16)) is a lone low surrogate")
          }
        default:
          throw fail("\\\(describe(escape)) is not a JSON escape", at: index - 2)
        }
        runStart = index
      }
    }

    mutating func hex4() throws(Error) -> UInt32 {
      guard index + 4 <= bytes.count else { throw fail("\\u needs four hex digits") }
      var value: UInt32 = 0
      for _ in 0..<4 {
        let byte = bytes[index]
        let digit: UInt32
        switch byte {
        case 0x30...0x39: digit = UInt32(byte - 0x30)
        case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
        case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
        default: throw fail("\\u needs four hex digits, found \(describe(byte))")
        }
        value = value << 4 | digit
        index += 1
      }
      return value
    }
  }
}
