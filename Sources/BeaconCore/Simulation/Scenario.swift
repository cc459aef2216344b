#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A scenario file for `simulate` (docs/DESIGN.md, Contracts): configuration, pairings, and timed events on a
/// virtual clock starting at 0.
public struct Scenario: Sendable {
  public enum Action: Sendable {
    /// An advertisement; `rawHex` ones are parsed from AD structures when played, so malformed
    /// data becomes a `rejected` line.
    case advertisement(address: BluetoothAddress, rssi: Int?, payload: Payload)
    /// The backend reports a device gone (BlueZ InterfacesRemoved).
    case lost(BluetoothAddress)
    case tripStart(tripId: TripID)
    case tripEvents(tripId: TripID, events: [TripEvent])
    case tripEnd(tripId: TripID)
    case tripAssign(tripId: TripID, deviceId: DeviceID)
    case pair(Pairing)
    case unpair(deviceId: DeviceID)
    /// An event whose trip ID, device ID or beacon identity breaks its rule (`path` says which
    /// field): played as a `rejected` line with the reason, as the daemon would refuse the call.
    case refused(path: String, IdentifierError)
  }

  public enum Payload: Sendable {
    case raw([UInt8])
    case structured(manufacturerData: [ManufacturerData], serviceData: [ServiceData], txPower: Int?)
  }

  public struct Entry: Sendable {
    public var at: Double
    public var action: Action

    public init(at: Double, action: Action) {
      self.at = at
      self.action = action
    }
  }

  public var configuration = BridgeConfiguration()
  public var pairings: [Pairing] = []
  /// The keys of the pairings by key, whose `Pairing`s are in `pairings` too.
  public var keyPairings: [ScenarioKeyPairing] = []
  /// Sorted by time; entries at the same time keep their file order.
  public var entries: [Entry] = []
  /// Play until this time (default: the last event).
  public var duration: Double?

  public init() {}

  /// The latest time an event or the duration may name: 10⁹ s, about 31 years. Far below what
  /// the virtual clock holds (2⁶³ ns, 292 years), so deadlines after the last event fit too.
  public static let maximumSeconds: Double = 1_000_000_000

  /// When the scenario ends.
  public var end: Double { max(duration ?? 0, entries.last?.at ?? 0) }
}

/// A scenario file that cannot be read, with the place of the problem.
public struct ScenarioError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

extension Scenario {
  /// Reads a scenario file's bytes. Throws one error naming the first problem and where it is.
  public static func decode(_ data: Data) throws(ScenarioError) -> Scenario {
    let root: JSONValue
    do { root = try JSONText.parse(Array(data)) } catch {
      // A repeated key is well-formed JSON that says two things: named as such.
      if error.duplicateKey != nil { throw ScenarioError(error.description) }
      // Where the JSON breaks, in the words `JSONDiagnosis` gives for every reader of JSON input.
      throw ScenarioError("not valid JSON: \(JSONDiagnosis.reason(data) ?? error.description)")
    }
    guard let object = root.objectValue else {
      throw ScenarioError("the top level must be an object, not \(root.typeName)")
    }
    for key in object.keys where !["config", "pairings", "events", "duration", "description"].contains(key) {
      throw ScenarioError(
        "unknown top-level key \"\(key)\" (expected config, pairings, events, duration, description)")
    }
    var scenario = Scenario()
    if let config = object["config"] {
      guard let fields = config.objectValue else { throw ScenarioError("config must be an object") }
      for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
        do { try scenario.configuration.set(key, to: try configText(key, value)) } catch {
          throw ScenarioError("config: \(error.description)")
        }
      }
      let problems = scenario.configuration.problems()
      if !problems.isEmpty { throw ScenarioError("config: " + problems.joined(separator: "; ")) }
    }
    if let pairings = object["pairings"] {
      guard let list = pairings.arrayValue else { throw ScenarioError("pairings must be an array") }
      var irkPairings = 0
      for (i, item) in list.enumerated() {
        let path = "pairings[\(i)]"
        // A pairing by key is numbered by its place in the list, from 1.
        if let keyed = try keyPairing(item, number: Int64(i + 1), at: path) {
          scenario.keyPairings.append(keyed)
          if case .irk = keyed.scheme { irkPairings += 1 }
          if irkPairings > KeyedIdentity.maximumIRKPairings {
            throw ScenarioError("\(path): \(KeyedIdentity.irkCapSentence)")
          }
          scenario.pairings.append(keyed.pairing)
        } else {
          scenario.pairings.append(try pairing(item, at: path))
        }
      }
    }
    guard let events = object["events"] else { throw ScenarioError("the scenario has no \"events\" array") }
    guard let list = events.arrayValue else { throw ScenarioError("events must be an array") }
    for (i, item) in list.enumerated() {
      scenario.entries.append(try entry(item, at: "events[\(i)]"))
    }
    // A stable sort: same-time events keep their file order.
    scenario.entries = scenario.entries.enumerated().sorted {
      ($0.element.at, $0.offset) < ($1.element.at, $1.offset)
    }
    .map(\.element)
    if let duration = object["duration"] {
      guard let d = duration.doubleValue, d >= 0, d <= maximumSeconds else {
        throw ScenarioError("duration must be a number of seconds from 0 to \(Int(maximumSeconds))")
      }
      scenario.duration = d
    }
    return scenario
  }

  /// A `config` value as the setting's text: a string as it is, a number as it was written
  /// (never rounded), a boolean for a boolean setting; null is the empty text.
  private static func configText(_ name: String, _ value: JSONValue) throws(ConfigurationError) -> String {
    guard let key = BridgeConfiguration.key(named: name) else { throw BridgeConfiguration.unknown(name) }
    let wanted =
      switch key.kind {
      case .number: "a number"
      case .boolean: "true or false"
      case .text: "a string"
      }
    switch value {
    case .string(let text): return text
    case .null: return ""
    case .bool(let flag):
      guard key.kind == .boolean else { throw ConfigurationError("\(name) must be \(wanted), not a boolean") }
      return flag ? "true" : "false"
    case .int, .double, .raw:
      guard let text = value.numberText else {
        throw ConfigurationError("\(name) must be \(wanted), not \(value.typeName)")
      }
      return text
    case .array, .object: throw ConfigurationError("\(name) must be \(wanted), not \(value.typeName)")
    }
  }

  private static func entry(_ value: JSONValue, at path: String) throws(ScenarioError) -> Entry {
    guard let object = value.objectValue else { throw ScenarioError("\(path) must be an object") }
    guard let atValue = object["at"] else { throw ScenarioError("\(path) has no \"at\" time") }
    guard let at = atValue.doubleValue, at >= 0, at <= maximumSeconds else {
      throw ScenarioError("\(path).at must be a number of seconds from 0 to \(Int(maximumSeconds))")
    }
    let actions = object.keys.filter { $0 != "at" }.sorted()
    guard actions.count == 1, let name = actions.first, let body = object[name] else {
      throw ScenarioError(
        "\(path) must have \"at\" and exactly one of advertisement, lost, tripStart, tripEvents, tripEnd, tripAssign, pair, unpair (found: \(actions.joined(separator: ", ")))"
      )
    }
    let where_ = "\(path).\(name)"
    guard let fields = body.objectValue else { throw ScenarioError("\(where_) must be an object") }
    // An action's fields, each known: a misspelt one is refused rather than left out. (An
    // advertisement and a pairing check their own.)
    let known: [String: [String]] = [
      "lost": ["address"], "tripStart": ["tripId"], "tripEnd": ["tripId"],
      "tripAssign": ["tripId", "deviceId"],
      "tripEvents": ["tripId", "events"], "unpair": ["deviceId"],
    ]
    if let names = known[name], let unknown = fields.keys.sorted().first(where: { !names.contains($0) }) {
      throw ScenarioError(
        "\(where_) has an unknown key \(unknown.quotedForMessage) (\(name) has \(names.joined(separator: ", ")))"
      )
    }
    switch name {
    case "advertisement":
      return Entry(at: at, action: try advertisement(fields, at: where_))
    case "lost":
      return Entry(at: at, action: .lost(try address(fields, at: where_)))
    case "tripStart", "tripEnd":
      let trip = try string(fields, "tripId", at: where_)
      do {
        let id = try TripID(trip)
        return Entry(at: at, action: name == "tripStart" ? .tripStart(tripId: id) : .tripEnd(tripId: id))
      } catch { return Entry(at: at, action: .refused(path: "\(where_).tripId", error)) }
    case "tripAssign":
      let trip = try string(fields, "tripId", at: where_)
      let device = try string(fields, "deviceId", at: where_)
      let tripId: TripID
      do { tripId = try TripID(trip) } catch {
        return Entry(at: at, action: .refused(path: "\(where_).tripId", error))
      }
      do { return Entry(at: at, action: .tripAssign(tripId: tripId, deviceId: try DeviceID(device))) } catch {
        return Entry(at: at, action: .refused(path: "\(where_).deviceId", error))
      }
    case "tripEvents":
      let tripText = try string(fields, "tripId", at: where_)
      guard let list = fields["events"]?.arrayValue else {
        throw ScenarioError("\(where_).events must be an array")
      }
      var events: [TripEvent] = []
      for (i, item) in list.enumerated() {
        do { events.append(try TripEvent(json: item)) } catch {
          throw ScenarioError("\(where_).events[\(i)]: \(error.description)")
        }
      }
      do { return Entry(at: at, action: .tripEvents(tripId: try TripID(tripText), events: events)) } catch {
        return Entry(at: at, action: .refused(path: "\(where_).tripId", error))
      }
    case "pair":
      switch try pairingResult(body, at: where_) {
      case .success(let pairing): return Entry(at: at, action: .pair(pairing))
      case .failure(let error): return Entry(at: at, action: .refused(path: where_, error))
      }
    case "unpair":
      let device = try string(fields, "deviceId", at: where_)
      do { return Entry(at: at, action: .unpair(deviceId: try DeviceID(device))) } catch {
        return Entry(at: at, action: .refused(path: "\(where_).deviceId", error))
      }
    default:
      throw ScenarioError("\(path) has an unknown action \"\(name)\"")
    }
  }

  private static func advertisement(_ fields: [String: JSONValue], at path: String) throws(ScenarioError)
    -> Action
  {
    let addr = try address(fields, at: path)
    var rssi: Int?
    if let value = fields["rssi"], value != .null {
      guard let r = value.intValue, r >= -128, r <= 127 else {
        throw ScenarioError("\(path).rssi must be a whole number from -128 to 127")
      }
      rssi = Int(r)
    }
    for key in fields.keys
    where !["address", "rssi", "rawHex", "manufacturerData", "serviceData", "txPower"].contains(key) {
      throw ScenarioError("\(path) has an unknown key \"\(key)\"")
    }
    if let raw = fields["rawHex"] {
      guard fields["manufacturerData"] == nil, fields["serviceData"] == nil else {
        throw ScenarioError("\(path) has rawHex and manufacturerData/serviceData; use one or the other")
      }
      guard let text = raw.stringValue, let bytes = Hex.decode(text) else {
        throw ScenarioError("\(path).rawHex must be a string of hex digits")
      }
      return .advertisement(address: addr, rssi: rssi, payload: .raw(bytes))
    }
    var manufacturer: [ManufacturerData] = []
    if let list = fields["manufacturerData"] {
      guard let items = list.arrayValue else {
        throw ScenarioError("\(path).manufacturerData must be an array")
      }
      for (i, item) in items.enumerated() {
        let p = "\(path).manufacturerData[\(i)]"
        guard let o = item.objectValue else { throw ScenarioError("\(p) must be an object") }
        try onlyKnown(o, ["companyId", "hex"], at: p)
        guard let company = o["companyId"]?.intValue, (0...0xFFFF).contains(company) else {
          throw ScenarioError("\(p).companyId must be a number from 0 to 65535")
        }
        manufacturer.append(ManufacturerData(companyID: UInt16(company), data: try hex(o, at: p)))
      }
    }
    var service: [ServiceData] = []
    if let list = fields["serviceData"] {
      guard let items = list.arrayValue else { throw ScenarioError("\(path).serviceData must be an array") }
      for (i, item) in items.enumerated() {
        let p = "\(path).serviceData[\(i)]"
        guard let o = item.objectValue else { throw ScenarioError("\(p) must be an object") }
        try onlyKnown(o, ["uuid", "hex"], at: p)
        guard let text = o["uuid"]?.stringValue, let uuid = ServiceUUID(text) else {
          throw ScenarioError("\(p).uuid must be a service UUID (\"feaa\" or the 128-bit form)")
        }
        service.append(ServiceData(uuid: uuid, data: try hex(o, at: p)))
      }
    }
    var txPower: Int?
    if let value = fields["txPower"] {
      guard let t = value.intValue, (-127...20).contains(t) else {
        throw ScenarioError("\(path).txPower must be -127…20")
      }
      txPower = Int(t)
    }
    return .advertisement(
      address: addr, rssi: rssi,
      payload: .structured(manufacturerData: manufacturer, serviceData: service, txPower: txPower))
  }

  /// Refuses a field not in `names`, naming it.
  private static func onlyKnown(_ o: [String: JSONValue], _ names: [String], at path: String)
    throws(ScenarioError)
  {
    if let unknown = o.keys.sorted().first(where: { !names.contains($0) }) {
      throw ScenarioError(
        "\(path) has an unknown key \(unknown.quotedForMessage) (expected \(names.joined(separator: ", ")))")
    }
  }

  private static func hex(_ o: [String: JSONValue], at path: String) throws(ScenarioError) -> [UInt8] {
    guard let text = o["hex"]?.stringValue, let bytes = Hex.decode(text) else {
      throw ScenarioError("\(path).hex must be a string of hex digits")
    }
    return bytes
  }

  private static func address(_ fields: [String: JSONValue], at path: String) throws(ScenarioError)
    -> BluetoothAddress
  {
    guard let text = fields["address"]?.stringValue else { throw ScenarioError("\(path).address is missing") }
    guard let address = BluetoothAddress(text) else {
      throw ScenarioError("\(path).address \"\(text)\" is not a Bluetooth address like C0:FF:EE:00:00:01")
    }
    return address
  }

  private static func string(_ fields: [String: JSONValue], _ key: String, at path: String)
    throws(ScenarioError)
    -> String
  {
    guard let value = fields[key] else { throw ScenarioError("\(path).\(key) is missing") }
    guard let text = value.stringValue else { throw ScenarioError("\(path).\(key) must be a string") }
    return text
  }

  /// A top-level pairing: any problem is an error in the file. The fleet's desired document
  /// (BridgeDaemon's `FleetDocument`) reads its pairings with this parser too.
  public static func pairing(_ value: JSONValue, at path: String) throws(ScenarioError) -> Pairing {
    switch try pairingResult(value, at: path) {
    case .success(let pairing): return pairing
    case .failure(let error): throw ScenarioError("\(path): \(error.description)")
    }
  }

  /// The fields of a pairing by identity.
  public static let pairingFields: Set<String> = ["uuid", "major", "minor", "deviceId", "label"]

  /// A pairing object: a malformed object throws; values that break the identifier rules (UUID,
  /// major/minor range, device ID, label) come back as the failure.
  static func pairingResult(_ value: JSONValue, at path: String) throws(ScenarioError)
    -> Result<Pairing, IdentifierError>
  {
    guard let o = value.objectValue else { throw ScenarioError("\(path) must be an object") }
    if o["eid"] != nil || o["irk"] != nil {
      throw ScenarioError("\(path): a pairing by key (eid, irk) belongs in the top-level pairings")
    }
    // A field misspelt is refused, never left out: "mnior" left out would pair the whole major.
    for key in o.keys.sorted() where !pairingFields.contains(key) {
      throw ScenarioError(
        "\(path) has an unknown key \(key.quotedForMessage) (a pairing has uuid, major, minor, deviceId, label)"
      )
    }
    guard let uuidText = o["uuid"]?.stringValue else { throw ScenarioError("\(path).uuid must be a string") }
    // A number past Int64 is out of range as written, never clamped to another number.
    var pastInt64: IdentifierError?
    func part(_ key: String) throws(ScenarioError) -> Int? {
      guard let v = o[key], v != .null else { return nil }
      switch v.exactInteger {
      case .integer(let n):
        // Far outside 0…65535 still reads as out of range, not as a wildcard.
        return Int(clamping: n)
      case .tooLarge:
        pastInt64 =
          pastInt64
          ?? IdentifierError(field: key, value: v.numberText ?? "", rule: PairingIdentity.numberRule)
        return nil
      case .notWhole, .notNumber: throw ScenarioError("\(path).\(key) must be a whole number or null")
      }
    }
    let major = try part("major")
    let minor = try part("minor")
    let deviceText = try string(o, "deviceId", at: path)
    var label: String?
    if let l = o["label"], l != .null {
      guard let text = l.stringValue else { throw ScenarioError("\(path).label must be a string") }
      label = text
    }
    do throws(IdentifierError) {
      guard let uuid = UUID(uuidString: uuidText) else {
        throw IdentifierError(
          field: "UUID", value: uuidText, rule: "is not a UUID like E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
      }
      if let pastInt64 { throw pastInt64 }
      let identity = try PairingIdentity(uuid: uuid, major: major, minor: minor)
      let device = try DeviceID(deviceText)
      if let label { try PairingLabel.check(label) }
      return .success(Pairing(identity: identity, deviceId: device, label: label))
    } catch {
      return .failure(error)
    }
  }
}
