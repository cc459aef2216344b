import BeaconCore

/// Why a `Status` reply did not read as a `StatusDocument`: a key this program needs is absent,
/// or holds another type. Said as a sentence, since it means the daemon runs another version
/// than the command asking it.
public struct StatusDocumentError: Error, Sendable, Equatable, CustomStringConvertible {
  public enum Problem: Sendable, Equatable {
    case missing
    case wrongType(expected: String, found: String)
    case unknownValue(String)
  }

  /// Where in the document, as `pairedBeacons[0].silent`.
  public var path: String
  public var problem: Problem

  public init(path: String, problem: Problem) {
    self.path = path
    self.problem = problem
  }

  public var description: String {
    let what =
      switch problem {
      case .missing: "has no \"\(path)\""
      case .wrongType(let expected, let found): "has \(found) for \"\(path)\", where \(expected) belongs"
      case .unknownValue(let value):
        "has \(value.quotedForMessage) for \"\(path)\", a value this beaconbridge does not know"
      }
    return
      "the daemon's status \(what): the running daemon is another version than this beaconbridge (restart it after an upgrade: systemctl restart beaconbridge)"
  }

  /// What fixes it, for `doctor`.
  public static let fix =
    "restart the daemon so that it runs the installed version: systemctl restart beaconbridge"
}

/// The fields of one JSON object of the document, read by key: a key that must be there and is
/// not, or a value of another type, is a `StatusDocumentError` naming its path. Keys it does not
/// ask for (a newer daemon's) are left alone.
struct StatusFieldReader<Key: RawRepresentable> where Key.RawValue == String {
  let fields: [String: JSONValue]
  let path: String

  init(_ value: JSONValue, path: String) throws(StatusDocumentError) {
    guard case .object(let fields) = value else {
      throw StatusValue.wrong(value, path, "an object")
    }
    self.fields = fields
    self.path = path
  }

  func path(_ key: Key) -> String { path.isEmpty ? key.rawValue : "\(path).\(key.rawValue)" }

  /// The value, which must be there (null included).
  func value(_ key: Key) throws(StatusDocumentError) -> JSONValue {
    guard let value = fields[key.rawValue] else {
      throw StatusDocumentError(path: path(key), problem: .missing)
    }
    return value
  }

  /// The value, nil when null; `omittable` also takes an absent key as nil.
  func optional<T>(
    _ key: Key, omittable: Bool = false, _ read: (JSONValue, String) throws(StatusDocumentError) -> T
  ) throws(StatusDocumentError) -> T? {
    let value: JSONValue
    if omittable {
      guard let present = fields[key.rawValue] else { return nil }
      value = present
    } else {
      value = try self.value(key)
    }
    if value == .null { return nil }
    return try read(value, path(key))
  }

  func required<T>(_ key: Key, _ read: (JSONValue, String) throws(StatusDocumentError) -> T)
    throws(StatusDocumentError) -> T
  {
    try read(try value(key), path(key))
  }

  func string(_ key: Key) throws(StatusDocumentError) -> String { try required(key, StatusValue.string) }
  func int(_ key: Key) throws(StatusDocumentError) -> Int { try required(key, StatusValue.int) }
  func double(_ key: Key) throws(StatusDocumentError) -> Double { try required(key, StatusValue.double) }
  func bool(_ key: Key) throws(StatusDocumentError) -> Bool { try required(key, StatusValue.bool) }

  func array<T>(_ key: Key, _ read: (JSONValue, String) throws(StatusDocumentError) -> T)
    throws(StatusDocumentError) -> [T]
  {
    try required(key) { (value, path) throws(StatusDocumentError) in
      guard case .array(let items) = value else { throw StatusValue.wrong(value, path, "an array") }
      var out: [T] = []
      for (index, item) in items.enumerated() { out.append(try read(item, "\(path)[\(index)]")) }
      return out
    }
  }
}

/// One value of the document, read as the type its key holds; a value of another type is a
/// `StatusDocumentError` naming its path.
enum StatusValue {
  static func string(_ value: JSONValue, _ path: String) throws(StatusDocumentError) -> String {
    guard case .string(let s) = value else { throw wrong(value, path, "a string") }
    return s
  }

  /// An integer, never through `Double`: `.int`, or number text that is one.
  static func int64(_ value: JSONValue, _ path: String) throws(StatusDocumentError) -> Int64 {
    switch value {
    case .int(let i): return i
    case .raw(let text) where Int64(text) != nil: return Int64(text)!
    default: throw wrong(value, path, "an integer")
    }
  }

  static func int(_ value: JSONValue, _ path: String) throws(StatusDocumentError) -> Int {
    Int(try int64(value, path))
  }

  static func double(_ value: JSONValue, _ path: String) throws(StatusDocumentError) -> Double {
    guard value.typeName == "number", let d = value.doubleValue else { throw wrong(value, path, "a number") }
    return d
  }

  static func bool(_ value: JSONValue, _ path: String) throws(StatusDocumentError) -> Bool {
    guard case .bool(let b) = value else { throw wrong(value, path, "true or false") }
    return b
  }

  /// An enumeration's raw value.
  static func word<T: RawRepresentable>(_ value: JSONValue, _ path: String) throws(StatusDocumentError) -> T
  where T.RawValue == String {
    let text = try string(value, path)
    guard let word = T(rawValue: text) else {
      throw StatusDocumentError(path: path, problem: .unknownValue(text))
    }
    return word
  }

  /// An object's values, each read alike.
  static func map<T>(
    _ value: JSONValue, _ path: String, _ read: (JSONValue, String) throws(StatusDocumentError) -> T
  ) throws(StatusDocumentError) -> [String: T] {
    guard case .object(let fields) = value else { throw wrong(value, path, "an object") }
    var out: [String: T] = [:]
    for (key, item) in fields { out[key] = try read(item, "\(path).\(key)") }
    return out
  }

  static func wrong(_ value: JSONValue, _ path: String, _ expected: String) -> StatusDocumentError {
    StatusDocumentError(path: path, problem: .wrongType(expected: expected, found: name(value)))
  }

  private static func name(_ value: JSONValue) -> String {
    switch value.typeName {
    case "null": "null"
    case "array", "object": "an \(value.typeName)"
    default: "a \(value.typeName)"
    }
  }
}

/// The fields of one JSON object of the document, written by key.
struct StatusFieldWriter<Key: RawRepresentable> where Key.RawValue == String {
  var fields: [String: JSONValue] = [:]

  subscript(key: Key) -> JSONValue {
    get { fields[key.rawValue] ?? .null }
    set { fields[key.rawValue] = newValue }
  }

  /// Sets the key only when there is a value (a key the document omits rather than nulls).
  mutating func omittable(_ key: Key, _ value: JSONValue?) {
    if let value { fields[key.rawValue] = value }
  }

  /// Adds another group's fields (identity, calibration, health share their object).
  mutating func merge(_ other: JSONValue) {
    for (key, value) in other.objectValue ?? [:] { fields[key] = value }
  }

  var json: JSONValue { .object(fields) }
}

extension JSONValue {
  static func of(_ value: Int?) -> JSONValue { value.map { .int(Int64($0)) } ?? .null }
  static func of(_ value: Int64?) -> JSONValue { value.map { .int($0) } ?? .null }
  static func of(_ value: Double?) -> JSONValue { value.map { .double($0) } ?? .null }
  static func of(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
}
