import BeaconCore

/// A problem in a configuration file, at `file:line`.
public struct KeyFileError: Error, Hashable, Sendable, CustomStringConvertible {
  public var file: String
  public var line: Int
  public var message: String

  public init(file: String, line: Int, message: String) {
    self.file = file
    self.line = line
    self.message = message
  }

  /// `file:line: message`; problems that belong to no single line (two settings that disagree)
  /// name the file alone.
  public var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
}

/// An INI keyfile as BlueZ's `main.conf` writes them: `[Section]` headers, `Key = Value` lines,
/// and `#` or `;` comments on their own lines.
public struct KeyFile: Hashable, Sendable {
  public struct Entry: Hashable, Sendable {
    public var section: String
    public var key: String
    public var value: String
    public var line: Int
  }

  public var file: String
  public var entries: [Entry]

  /// The longest line, in bytes: far above any real setting, and it keeps a runaway value out of
  /// memory-hungry checks and out of the journal.
  public static let maxLineBytes = 4096

  /// Parses the text; every syntax problem is an error at its line. Duplicate keys in a section
  /// are an error too: the daemon refuses to guess which one was meant. A line longer than
  /// `maxLineBytes`, or a setting with a control character (a NUL, an escape; a tab is a space), is refused,
  /// and values are quoted in errors cut short and escaped.
  public static func parse(_ text: String, file: String) throws(KeyFileError) -> KeyFile {
    var entries: [Entry] = []
    var section: String?
    var seen: [String: Int] = [:]
    var number = 0
    for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
      number += 1
      var line = String(raw)
      if line.hasSuffix("\r") { line.removeLast() }
      guard line.utf8.count <= maxLineBytes else {
        throw KeyFileError(
          file: file, line: number,
          message: "the line is \(line.utf8.count) bytes long, over \(maxLineBytes): \(line.quotedForMessage)"
        )
      }
      let trimmed = line.trimmedWhitespace
      if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
      if let bad = line.unicodeScalars.first(where: {
        $0 != "\t" && $0.properties.generalCategory == .control
      }) {
        throw KeyFileError(
          file: file, line: number,
          message:
            "the line has a control character (\(bad.codePointText)): \(line.quotedForMessage); remove it"
        )
      }
      if trimmed.hasPrefix("[") {
        guard trimmed.hasSuffix("]"), trimmed.count > 2 else {
          throw KeyFileError(file: file, line: number, message: "a section header must look like [Name]")
        }
        let name = String(trimmed.dropFirst().dropLast()).trimmedWhitespace
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber }) else {
          throw KeyFileError(file: file, line: number, message: "bad section name \(name.quotedForMessage)")
        }
        section = name
        continue
      }
      guard let equals = trimmed.firstIndex(of: "=") else {
        throw KeyFileError(
          file: file, line: number, message: "expected Key = Value, a [Section] or a # comment")
      }
      guard let current = section else {
        throw KeyFileError(file: file, line: number, message: "a setting before any [Section]")
      }
      let key = String(trimmed[..<equals]).trimmedWhitespace
      let value = String(trimmed[trimmed.index(after: equals)...]).trimmedWhitespace
      guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber }) else {
        throw KeyFileError(file: file, line: number, message: "bad key \(key.quotedForMessage)")
      }
      if let first = seen["\(current).\(key)"] {
        throw KeyFileError(
          file: file, line: number, message: "\(key) is set twice in [\(current)] (first at line \(first))")
      }
      seen["\(current).\(key)"] = number
      entries.append(Entry(section: current, key: key, value: value, line: number))
    }
    return KeyFile(file: file, entries: entries)
  }
}
