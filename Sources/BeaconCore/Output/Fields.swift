/// The machinery every reported type (`ReportedIdentity`, `ReportedCalibration`,
/// `ReportedHealth`, `ReportedBeacon`, `ReportedSnapshot`, `ReportedPairing`, and the
/// daemon's `StatusDocument` around them) writes and reads its keys with. A type spells each of
/// its keys once, as a case of its own `Key`; nothing else names them.

/// Fields written in order, by key: an event line keeps the order (`JSONWriter.writeObject`),
/// an object (`json`) is written with its keys sorted (`JSONValue.compactText`).
public struct FieldWriter<Key: RawRepresentable> where Key.RawValue == String {
  public private(set) var fields: [(key: String, value: JSONValue)] = []

  public init() {}

  /// Adds a field; each key is added once.
  public mutating func add(_ key: Key, _ value: JSONValue) { fields.append((key.rawValue, value)) }

  /// Sets the key only when there is a value (a key the output omits rather than nulls).
  public mutating func omittable(_ key: Key, _ value: JSONValue?) {
    if let value { add(key, value) }
  }

  /// Adds another type's fields (identity, calibration and health share their object).
  public mutating func merge(_ other: [(key: String, value: JSONValue)]) { fields += other }

  public var json: JSONValue { .object(Dictionary(fields, uniquingKeysWith: { $1 })) }
}

/// Why a reported object did not read: a key the reader needs is absent, or holds another type.
public struct FieldError: Error, Sendable, Equatable {
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
}

/// The fields of one JSON object, read by key: a key that must be there and is not, or a value
/// of another type, is a `FieldError` naming its path. Keys it does not ask for (a newer
/// version's) are left alone.
public struct FieldReader<Key: RawRepresentable> where Key.RawValue == String {
  let fields: [String: JSONValue]
  let path: String

  public init(_ value: JSONValue, path: String) throws(FieldError) {
    guard case .object(let fields) = value else {
      throw FieldValue.wrong(value, path, "an object")
    }
    self.fields = fields
    self.path = path
  }

  func path(_ key: Key) -> String { path.isEmpty ? key.rawValue : "\(path).\(key.rawValue)" }

  /// The value, which must be there (null included).
  public func value(_ key: Key) throws(FieldError) -> JSONValue {
    guard let value = fields[key.rawValue] else {
      throw FieldError(path: path(key), problem: .missing)
    }
    return value
  }

  /// The value, nil when null; `omittable` also takes an absent key as nil.
  public func optional<T>(
    _ key: Key, omittable: Bool = false, _ read: (JSONValue, String) throws(FieldError) -> T
  ) throws(FieldError) -> T? {
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

  public func required<T>(_ key: Key, _ read: (JSONValue, String) throws(FieldError) -> T)
    throws(FieldError) -> T
  {
    try read(try value(key), path(key))
  }

  public func string(_ key: Key) throws(FieldError) -> String { try required(key, FieldValue.string) }
  public func int(_ key: Key) throws(FieldError) -> Int { try required(key, FieldValue.int) }
  public func double(_ key: Key) throws(FieldError) -> Double { try required(key, FieldValue.double) }
  public func bool(_ key: Key) throws(FieldError) -> Bool { try required(key, FieldValue.bool) }

  public func array<T>(_ key: Key, _ read: (JSONValue, String) throws(FieldError) -> T)
    throws(FieldError) -> [T]
  {
    try required(key) { (value, path) throws(FieldError) in
      guard case .array(let items) = value else { throw FieldValue.wrong(value, path, "an array") }
      var out: [T] = []
      for (index, item) in items.enumerated() { out.append(try read(item, "\(path)[\(index)]")) }
      return out
    }
  }
}

/// One value of a reported object, read as the type its key holds; a value of another type is a
/// `FieldError` naming its path.
public enum FieldValue {
  public static func string(_ value: JSONValue, _ path: String) throws(FieldError) -> String {
    guard case .string(let s) = value else { throw wrong(value, path, "a string") }
    return s
  }

  /// An integer, never through `Double`: `.int`, or number text that is one.
  public static func int64(_ value: JSONValue, _ path: String) throws(FieldError) -> Int64 {
    switch value {
    case .int(let i): return i
    case .raw(let text) where Int64(text) != nil: return Int64(text)!
    default: throw wrong(value, path, "an integer")
    }
  }

  public static func int(_ value: JSONValue, _ path: String) throws(FieldError) -> Int {
    Int(try int64(value, path))
  }

  public static func double(_ value: JSONValue, _ path: String) throws(FieldError) -> Double {
    guard value.typeName == "number", let d = value.doubleValue else { throw wrong(value, path, "a number") }
    return d
  }

  public static func bool(_ value: JSONValue, _ path: String) throws(FieldError) -> Bool {
    guard case .bool(let b) = value else { throw wrong(value, path, "true or false") }
    return b
  }

  /// An identifier, checked by its type's rule (`DeviceID`, `TripID`); one that breaks it is an
  /// unknown value at its path.
  public static func identifier<T: ValidatedIdentifier>(_ value: JSONValue, _ path: String) throws(FieldError)
    -> T
  {
    let text = try string(value, path)
    do { return try T(text) } catch { throw FieldError(path: path, problem: .unknownValue(text)) }
  }

  public static func deviceID(_ value: JSONValue, _ path: String) throws(FieldError) -> DeviceID {
    try identifier(value, path)
  }

  public static func tripID(_ value: JSONValue, _ path: String) throws(FieldError) -> TripID {
    try identifier(value, path)
  }

  /// An enumeration's raw value.
  public static func word<T: RawRepresentable>(_ value: JSONValue, _ path: String) throws(FieldError) -> T
  where T.RawValue == String {
    let text = try string(value, path)
    guard let word = T(rawValue: text) else {
      throw FieldError(path: path, problem: .unknownValue(text))
    }
    return word
  }

  /// An object's values, each read alike.
  public static func map<T>(
    _ value: JSONValue, _ path: String, _ read: (JSONValue, String) throws(FieldError) -> T
  ) throws(FieldError) -> [String: T] {
    guard case .object(let fields) = value else { throw wrong(value, path, "an object") }
    var out: [String: T] = [:]
    for (key, item) in fields { out[key] = try read(item, "\(path).\(key)") }
    return out
  }

  public static func wrong(_ value: JSONValue, _ path: String, _ expected: String) -> FieldError {
    FieldError(path: path, problem: .wrongType(expected: expected, found: name(value)))
  }

  private static func name(_ value: JSONValue) -> String {
    switch value.typeName {
    case "null": "null"
    case "array", "object": "an \(value.typeName)"
    default: "a \(value.typeName)"
    }
  }
}

extension JSONValue {
  public static func of(_ value: Int?) -> JSONValue { value.map { .int(Int64($0)) } ?? .null }
  public static func of(_ value: Int64?) -> JSONValue { value.map { .int($0) } ?? .null }
  public static func of(_ value: Double?) -> JSONValue { value.map { .double($0) } ?? .null }
  public static func of(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
  public static func of(_ value: DeviceID?) -> JSONValue { value.map { .string($0.rawValue) } ?? .null }
  public static func of(_ value: Bool) -> JSONValue { .bool(value) }
}

/// The one rounding rule of each reported figure (docs/dbus-api.md, "Output fields"): every
/// output that carries a figure rounds it here, so an event line, the status and the upload body
/// say the same number.
public enum Rounding {
  /// Smoothed RSSI (dBm), distance (m), ages and waits (s): 0.1.
  public static func tenths(_ value: Double) -> Double { (value * 10).rounded() / 10 }
  /// Temperature (°C): 0.01.
  public static func hundredths(_ value: Double) -> Double { (value * 100).rounded() / 100 }
  /// Packet loss (a fraction): 0.001.
  public static func thousandths(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
  /// Seconds since `time`, never negative, to 0.1 s.
  public static func ago(_ time: Timestamp?, now: Timestamp) -> Double? {
    time.map { tenths(max(0, now - $0)) }
  }
}
