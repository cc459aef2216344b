import BeaconCore

/// What one subcommand accepts, read from the same text `--help` prints (its usage lines and
/// discussion), so that the man page and the shell completions made from it cannot drift from
/// `--help`: `beaconbridge help --man` and `beaconbridge help --completion bash|zsh|fish`.
public struct CommandReference: Sendable {
  public struct Option: Sendable, Hashable {
    /// `--state-dir`.
    public let name: String
    /// `DIR`, or nil for a flag.
    public let value: String?
    /// The text after the option in the OPTIONS list, joined into one line ("" when not listed).
    public let summary: String
    /// The literal choices of a `bluez|hci` value.
    public var choices: [String] {
      guard let value, value.contains("|") else { return [] }
      return value.split(separator: "|").map(String.init)
    }
  }

  public let name: String
  public let abstract: String
  /// The usage lines, without "USAGE:".
  public let usage: [String]
  public let discussion: String
  /// The words after the command name that select an action (`trip start`, `gzone diff`).
  public let actions: [String]
  /// Every `--option` the usage or discussion names, in order of first mention.
  public let options: [Option]
  /// Whether a positional FILE (or DIR) follows.
  public let takesFiles: Bool

  public init(_ command: any BridgeCommand.Type) {
    name = command.name
    abstract = command.abstract
    discussion = command.discussion
    usage = command.usage.split(separator: "\n").map { String($0).trimmedWhitespace }.filter { !$0.isEmpty }
    var actions: [String] = []
    var takesFiles = false
    for line in usage {
      let words = line.split(separator: " ").map(String.init)
      if words.count > 2, words[0] == "beaconbridge", words[1] == name,
        let first = words[2].first, first.isLowercase, !actions.contains(words[2])
      {
        actions.append(words[2])
      }
      for word in words.dropFirst(2) where !word.hasPrefix("-") && !word.hasPrefix("[") {
        let stem = word.split(separator: "|").first.map(String.init) ?? word
        if stem.hasSuffix("FILE") || stem.hasSuffix("DIR") { takesFiles = true }
      }
    }
    self.actions = actions
    self.takesFiles = takesFiles
    options = Self.options(usage: usage, discussion: discussion)
  }

  /// The OPTIONS list's entries: term ("--speed X") and text, continuation lines joined.
  public static func listEntries(_ discussion: String) -> [(term: String, text: String)] {
    var entries: [(term: String, text: String)] = []
    for line in discussion.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
      if let entry = listEntry(line) {
        entries.append(entry)
      } else if line.hasPrefix("    "), !entries.isEmpty {
        let more = line.trimmedWhitespace
        entries[entries.count - 1].text += (entries[entries.count - 1].text.isEmpty ? "" : " ") + more
      }
    }
    return entries
  }

  /// "  term   text" (two spaces in, two or more between) as term and text; nil for other lines.
  static func listEntry(_ line: String) -> (term: String, text: String)? {
    guard line.hasPrefix("  "), let third = line.dropFirst(2).first, third != " " else { return nil }
    let body = line.dropFirst(2)
    guard let gap = body.range(of: "  ") else { return (String(body), "") }
    return (String(body[..<gap.lowerBound]), String(body[gap.upperBound...]).trimmedWhitespace)
  }

  static func options(usage: [String], discussion: String) -> [Option] {
    var order: [String] = []
    var values: [String: String] = [:]
    var summaries: [String: String] = [:]
    func note(_ name: String, value: String?) {
      if !order.contains(name) { order.append(name) }
      if let value, values[name] == nil { values[name] = value }
    }
    for line in usage {
      let words = line.split(separator: " ").map(String.init)
      for (index, word) in words.enumerated() {
        let bare = String(word.drop { $0 == "[" })
        guard bare.hasPrefix("--") else { continue }
        let name = String(bare.prefix { $0 != "]" })
        var value: String?
        if !word.hasSuffix("]"), index + 1 < words.count {
          let next = words[index + 1]
          if !next.hasPrefix("-"), !next.hasPrefix("["), let first = next.first,
            first.isUppercase || next.contains("|") || next.hasPrefix("hci")
          {
            var text = next.hasSuffix("...") ? String(next.dropLast(3)) : next
            if word.hasPrefix("["), text.hasSuffix("]") { text.removeLast() }
            value = text
          }
        }
        note(name, value: value)
      }
    }
    for (term, text) in listEntries(discussion) where term.hasPrefix("--") {
      let parts = term.split(separator: " ", maxSplits: 1).map(String.init)
      note(parts[0], value: parts.count > 1 ? parts[1] : nil)
      summaries[parts[0]] = text
    }
    // Options the prose names too (e.g. "--backend/--adapter").
    for token in discussion.split(whereSeparator: { " \n,()/'.;".contains($0) }) where token.hasPrefix("--") {
      let name = String(token.prefix { $0.isLetter || $0.isNumber || $0 == "-" })
      if name.count > 2 { note(name, value: nil) }
    }
    return order.map { Option(name: $0, value: values[$0], summary: summaries[$0] ?? "") }
  }

  /// Every subcommand's reference, in `--help` order.
  public static var all: [CommandReference] { CLI.commands.map(CommandReference.init) }
}
