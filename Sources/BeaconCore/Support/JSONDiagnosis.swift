/// Why bytes are not JSON, and where ("Invalid value around character 19."), in the words
/// `JSONSerialization` used; `JSONDecoder` only says that they are not. Used for error messages
/// only, never for parsing. A syntax check of its own (RFC 8259), so that GZone needs no
/// Foundation (`JSONSerialization` brings CoreFoundation into the daemon; docs/PERFORMANCE.md).
/// Every reader of JSON input (scenario, trip events, G-Zone payloads) says where the JSON breaks
/// through it, rather than passing on `JSONDecoder`'s `DecodingError` text.
public enum JSONDiagnosis {
  /// nil when the bytes are one well-formed JSON value (with surrounding whitespace).
  public static func reason(_ data: some Collection<UInt8>) -> String? {
    var checker = Checker(bytes: Array(data))
    do throws(Problem) {
      checker.skipSpace()
      try checker.value(depth: 0)
      checker.skipSpace()
      guard checker.at == checker.bytes.count else { throw .garbage(checker.at) }
      return nil
    } catch {
      switch error {
      case .end: return "Unexpected end of file during JSON parse."
      case .invalid(let at): return "Invalid value around character \(at)."
      case .garbage(let at): return "Garbage at end around character \(at)."
      case .tooDeep(let at): return "Too many nested arrays or dictionaries around character \(at)."
      }
    }
  }

  enum Problem: Error {
    case end
    case invalid(Int)
    case garbage(Int)
    case tooDeep(Int)
  }

  struct Checker {
    let bytes: [UInt8]
    var at = 0

    mutating func skipSpace() {
      while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
    }

    func peek() throws(Problem) -> UInt8 {
      guard at < bytes.count else { throw .end }
      return bytes[at]
    }

    mutating func expect(_ byte: UInt8) throws(Problem) {
      guard try peek() == byte else { throw .invalid(at) }
      at += 1
    }

    mutating func value(depth: Int) throws(Problem) {
      guard depth < 512 else { throw .tooDeep(at) }
      switch try peek() {
      case UInt8(ascii: "{"): try object(depth: depth)
      case UInt8(ascii: "["): try array(depth: depth)
      case UInt8(ascii: "\""): try string()
      case UInt8(ascii: "t"): try literal("true")
      case UInt8(ascii: "f"): try literal("false")
      case UInt8(ascii: "n"): try literal("null")
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
      default: throw .invalid(at)
      }
    }

    mutating func object(depth: Int) throws(Problem) {
      let start = at
      at += 1
      skipSpace()
      if try peek() == UInt8(ascii: "}") {
        at += 1
        return
      }
      while true {
        guard try peek() == UInt8(ascii: "\"") else { throw .invalid(start) }
        try string()
        skipSpace()
        try expect(UInt8(ascii: ":"))
        skipSpace()
        try value(depth: depth + 1)
        skipSpace()
        let next = try peek()
        at += 1
        if next == UInt8(ascii: "}") { return }
        guard next == UInt8(ascii: ",") else { throw .invalid(at - 1) }
        skipSpace()
      }
    }

    mutating func array(depth: Int) throws(Problem) {
      at += 1
      skipSpace()
      if try peek() == UInt8(ascii: "]") {
        at += 1
        return
      }
      while true {
        try value(depth: depth + 1)
        skipSpace()
        let next = try peek()
        at += 1
        if next == UInt8(ascii: "]") { return }
        guard next == UInt8(ascii: ",") else { throw .invalid(at - 1) }
        skipSpace()
      }
    }

    mutating func string() throws(Problem) {
      let start = at
      at += 1
      while true {
        let byte = try peek()
        at += 1
        switch byte {
        case UInt8(ascii: "\""): return
        case UInt8(ascii: "\\"):
          let escaped = try peek()
          at += 1
          if escaped == UInt8(ascii: "u") {
            for _ in 0..<4 {
              guard (try peek()).isHexDigit else { throw .invalid(start) }
              at += 1
            }
          } else if !Array("\"\\/bfnrt".utf8).contains(escaped) {
            throw .invalid(start)
          }
        case 0..<0x20: throw .invalid(start)
        default: break
        }
      }
    }

    mutating func literal(_ word: StaticString) throws(Problem) {
      let start = at
      for i in 0..<word.utf8CodeUnitCount {
        guard at < bytes.count else { throw .end }
        guard bytes[at] == word.utf8Start[i] else { throw .invalid(start) }
        at += 1
      }
    }

    mutating func number() throws(Problem) {
      let start = at
      if bytes[at] == UInt8(ascii: "-") { at += 1 }
      func digits(_ c: inout Checker) throws(Problem) -> Int {
        var n = 0
        while c.at < c.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c.bytes[c.at]) {
          c.at += 1
          n += 1
        }
        if n == 0 { throw c.at == c.bytes.count ? .end : .invalid(start) }
        return n
      }
      let leadingZero = at < bytes.count && bytes[at] == UInt8(ascii: "0")
      if try digits(&self) > 1 && leadingZero { throw .invalid(start) }
      if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
        at += 1
        _ = try digits(&self)
      }
      if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
        at += 1
        if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
        _ = try digits(&self)
      }
    }
  }
}

extension UInt8 {
  fileprivate var isHexDigit: Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
      || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
      || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
  }
}
