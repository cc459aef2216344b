import BeaconCore

/// A usage error: wrong arguments. Exits 64 (EX_USAGE) with the message and a hint on stderr.
public struct UsageError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// The arguments of one command, consumed as they are read: flags, `--name VALUE` or
/// `--name=VALUE` options, and positionals. `finish()` refuses whatever is left.
public struct Arguments: Sendable {
  private var items: [String]
  public let command: String
  /// The flags read so far: one left over after them was given twice.
  private var consumed: Set<String> = []

  public init(_ items: [String], command: String) {
    self.items = items
    self.command = command
  }

  /// True when the flag is present (and removes it).
  public mutating func flag(_ name: String) -> Bool {
    // Known as this command's flag: a leftover `--name=VALUE` is then "takes no value".
    if items.contains(where: { $0.hasPrefix(name + "=") }) { consumed.insert(name) }
    guard let index = items.firstIndex(of: name) else { return false }
    items.remove(at: index)
    consumed.insert(name)
    return true
  }

  /// Whether `name` is still among the arguments, as `--name` or `--name=VALUE`.
  public func present(_ name: String) -> Bool {
    items.contains { $0 == name || $0.hasPrefix(name + "=") }
  }

  /// The value of `--name VALUE` or `--name=VALUE`, if given. An empty value is a usage error
  /// for every option (`--state-dir ""` must not mean the default directory).
  /// `repeatable`: the option may be given more than once (`replay --pair`), each read by one call.
  public mutating func option(_ name: String, repeatable: Bool = false) throws(UsageError) -> String? {
    if let index = items.firstIndex(where: { $0.hasPrefix(name + "=") }) {
      let value = String(items[index].dropFirst(name.count + 1))
      items.remove(at: index)
      guard repeatable || !present(name) else { throw UsageError("\(name) given twice") }
      guard !value.isEmpty else { throw UsageError("\(name) needs a value, not an empty string") }
      return value
    }
    guard let index = items.firstIndex(of: name) else { return nil }
    guard index + 1 < items.count, !items[index + 1].hasPrefix("--") || items[index + 1] == "-" else {
      throw UsageError("\(name) needs a value")
    }
    let value = items[index + 1]
    items.removeSubrange(index...(index + 1))
    guard repeatable || !present(name) else { throw UsageError("\(name) given twice") }
    guard !value.isEmpty else { throw UsageError("\(name) needs a value, not an empty string") }
    return value
  }

  /// A number option, checked against a range.
  public mutating func number(_ name: String, in range: ClosedRange<Double>) throws(UsageError) -> Double? {
    guard let text = try option(name) else { return nil }
    guard let value = Double(text), value.isFinite else {
      throw UsageError("\(name) must be a number, not \(text.quotedForMessage)")
    }
    guard range.contains(value) else {
      throw UsageError(
        "\(name) must be between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound))")
    }
    return value
  }

  /// The next positional argument.
  public mutating func positional(_ name: String) throws(UsageError) -> String {
    guard let index = items.firstIndex(where: { !$0.hasPrefix("--") || $0 == "-" }) else {
      throw UsageError("missing \(name)")
    }
    let value = items.remove(at: index)
    guard !value.isEmpty else { throw UsageError("\(name) must not be an empty string") }
    return value
  }

  /// Refuses anything not consumed.
  public func finish() throws(UsageError) {
    guard let first = items.first else { return }
    if consumed.contains(first) { throw UsageError("\(first) given twice") }
    if let equals = first.firstIndex(of: "="), consumed.contains(String(first[..<equals])) {
      throw UsageError("\(first[..<equals]) takes no value")
    }
    if first.hasPrefix("-") && first != "-" {
      throw UsageError("unknown option \(first.escapingControlCharacters) for '\(command)'")
    }
    throw UsageError("unexpected argument \(first.quotedForMessage) for '\(command)'")
  }

  static func format(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(value)
  }
}

extension Arguments {
  /// An option whose value is an identifier, built by its validated type (`TripID`, `DeviceID`,
  /// `HCIDeviceID`): the type's refusal becomes a usage error that names the option.
  public mutating func option<T: ValidatedIdentifier>(_ name: String, as type: T.Type) throws(UsageError)
    -> T?
  {
    guard let text = try option(name) else { return nil }
    do throws(IdentifierError) { return try T(text) } catch {
      throw UsageError("\(name): \(error.description)")
    }
  }
}
