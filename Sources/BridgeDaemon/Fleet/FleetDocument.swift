import BeaconCore
import BeaconCrypto
import FoundationEssentials

/// One remotely set configuration key, in its section (`[Presence] exitTimeout = 30`).
public struct FleetSetting: Hashable, Sendable, Codable {
  public var section: String
  public var key: String
  public var value: String

  public init(section: String, key: String, value: String) {
    self.section = section
    self.key = key
    self.value = value
  }
}

/// The desired document (docs/fleet.md "Desired and reported"):
/// `{"version": N, "pairings": [...], "settings": {"Section": {"key": value}}}`, checked whole.
/// Pairings are the scenario file's pairing objects, read by the scenario's own parsers
/// (`Scenario.pairing`, and `Scenario.keyPairing` for `eid` and `irk`), so every door holds the
/// same identifier and key rules.
public struct FleetDocument: Hashable, Sendable {
  public var version: Int64
  /// The pairings by identity (UUID, major, minor).
  public var pairings: [Pairing]
  /// The pairings by key, their keys redacted from every description (`ScenarioKeyPairing.Key`).
  public var keyPairings: [ScenarioKeyPairing] = []
  public var settings: [FleetSetting]

  public init(
    version: Int64, pairings: [Pairing], keyPairings: [ScenarioKeyPairing] = [], settings: [FleetSetting]
  ) {
    self.version = version
    self.pairings = pairings
    self.keyPairings = keyPairings
    self.settings = settings
  }

  /// Every pairing the document carries, by identity and by key.
  public var pairingCount: Int { pairings.count + keyPairings.count }

  /// The rotation exponents of its EID pairings: the box's whole cold search once it is
  /// applied, since the document's pairings by key replace the store's.
  public var eidRotationExponents: [UInt8] {
    keyPairings.compactMap { keyed -> UInt8? in
      if case .eid(_, let k, _) = keyed.scheme { return k }
      return nil
    }
  }

  /// The keys a desired document may set: the core's number settings of `[Presence]`,
  /// `[ActiveBeacon]` and `[Trips]`. Each is range-checked as the file's are, and none can cut
  /// the box off (the upload, the broker and the radio stay local).
  public static let remotelySettable: [(section: String, key: String)] = BridgeConfiguration.keys.compactMap {
    key in
    let section = BridgeConfiguration.section(of: key.name)
    guard key.number != nil, ["Presence", "ActiveBeacon", "Trips"].contains(section) else { return nil }
    return (section, key.name)
  }

  /// The most pairings one document may carry: bounded work and memory for a hostile broker.
  public static let maxPairings = 10_000

  /// A pairing object's fields that carry key material (an EID identity key, an IRK): taken
  /// only over TLS, where no one on the path can read them.
  public static let keyFields: Set<String> = ["eid", "irk"]

  /// Reads a document; a problem is the sentence the reported document gives as its reason.
  /// `overTLS`: whether it came over an `mqtts://` connection. `file`: the configuration file the
  /// settings lie over; the rules across keys (`exitTimeout` at most `exitTimeoutMax`) hold for
  /// the file's values with the document's over them, as the daemon runs them.
  public static func parse(
    _ bytes: [UInt8], overTLS: Bool = true, file: DaemonConfiguration = DaemonConfiguration()
  ) -> Result<FleetDocument, FleetRefusal> {
    let root: JSONValue
    do { root = try JSONText.parse(bytes) } catch {
      return .failure(FleetRefusal(version: nil, unreadable(bytes, error)))
    }
    guard let object = root.objectValue else {
      return .failure(FleetRefusal(version: nil, "the document is a JSON \(root.typeName), not an object"))
    }
    let version: Int64
    switch readVersion(object["version"]) {
    case .success(let number): version = number
    case .failure(let refusal): return .failure(refusal)
    }
    func refuse(_ reason: String) -> Result<FleetDocument, FleetRefusal> {
      .failure(FleetRefusal(version: version, reason))
    }
    if let unknown = object.keys.sorted().first(where: { !["version", "pairings", "settings"].contains($0) })
    {
      return refuse("unknown key \(unknown.quotedForMessage) (expected version, pairings, settings)")
    }
    var document = FleetDocument(version: version, pairings: [], settings: [])
    if let list = object["pairings"] {
      guard let items = list.arrayValue else { return refuse("pairings must be an array") }
      guard items.count <= maxPairings else {
        return refuse("pairings holds \(items.count) pairings, over \(maxPairings)")
      }
      var seen: [String: Int] = [:]
      var seenKeys: [[UInt8]: Int] = [:]
      var irkPairings = 0
      for (index, item) in items.enumerated() {
        let path = "pairings[\(index)]"
        // Only key material is refused for the connection; any other field is read, and an
        // unknown one refused by name, below.
        if !overTLS, let field = item.objectValue?.keys.sorted().first(where: keyFields.contains) {
          return refuse(
            "\(path) carries \(field.quotedForMessage): keys are refused over a connection without TLS; use an mqtts:// broker"
          )
        }
        do throws(ScenarioError) {
          // Numbered by place, from 1, as the scenario's are: the store gives each its own.
          if let keyed = try Scenario.keyPairing(item, number: Int64(index + 1), at: path) {
            // One key once: the store keys pairings by key. The key itself is never named.
            if let first = seenKeys[keyed.scheme.keyIdentity] {
              return refuse("\(path) repeats the key of pairings[\(first)]")
            }
            seenKeys[keyed.scheme.keyIdentity] = index
            document.keyPairings.append(keyed)
            if case .irk = keyed.scheme { irkPairings += 1 }
            if irkPairings > KeyedIdentity.maximumIRKPairings {
              return refuse("\(path): \(KeyedIdentity.irkCapSentence)")
            }
            continue
          }
          let pairing = try Scenario.pairing(item, at: path)
          // One beacon pattern once: the store keys pairings by it.
          let pattern =
            "\(pairing.uuid)/\(pairing.major.map(String.init) ?? "*")/\(pairing.minor.map(String.init) ?? "*")"
          if let first = seen[pattern] {
            return refuse("\(path) repeats the beacon of pairings[\(first)]")
          }
          seen[pattern] = index
          document.pairings.append(pairing)
        } catch {
          return refuse(error.description)
        }
      }
    }
    if let settings = object["settings"] {
      guard let sections = settings.objectValue else {
        return refuse("settings must be an object of sections")
      }
      // Each value is checked on its own against a copy of the file's configuration, then the
      // whole as the daemon would run it (DaemonSettings.bridge).
      var scratch = file.bridge
      let settableSections = Set(remotelySettable.map(\.section))
      for (section, keys) in sections.sorted(by: { $0.key < $1.key }) {
        // A section nothing can be set in is refused even when empty: a misspelt "Presense"
        // would otherwise be taken as setting nothing.
        guard settableSections.contains(section) else {
          if let key = keys.objectValue?.keys.sorted().first {
            return refuse(
              "settings.\(section).\(key) cannot be set remotely (docs/fleet.md lists the keys that can)")
          }
          let list = settableSections.sorted().joined(separator: ", ")
          return refuse("settings.\(section) cannot be set remotely (a document sets keys of \(list))")
        }
        guard let keys = keys.objectValue else { return refuse("settings.\(section) must be an object") }
        for (key, value) in keys.sorted(by: { $0.key < $1.key }) {
          guard remotelySettable.contains(where: { $0 == (section, key) }) else {
            return refuse(
              "settings.\(section).\(key) cannot be set remotely (docs/fleet.md lists the keys that can)")
          }
          // The number as it was written, checked and applied as such: never rewritten first.
          let text: String
          if case .string(let string) = value {
            text = string
          } else if let literal = value.numberText {
            text = literal
          } else {
            return refuse("settings.\(section).\(key) must be a number, not \(value.typeName)")
          }
          do { try scratch.set(key, to: text) } catch {
            return refuse("settings.\(section).\(key): \(error.description)")
          }
          document.settings.append(FleetSetting(section: section, key: key, value: text))
        }
      }
    }
    let bridge = DaemonSettings.bridge(file: file, remote: document.settings)
    if let problem = bridge.problems().first {
      return refuse("settings: \(problem), with the configuration file's values")
    }
    // Its EID pairings with the tolerance it runs with are the box's whole cold search.
    if let refusal = ColdSearchLimit.refusal(
      eidClockTolerance: bridge.eidClockTolerance, rotationExponents: document.eidRotationExponents)
    {
      return refuse(refusal)
    }
    return .success(document)
  }

  /// Why bytes are not a document that can be read, each in its own words: not JSON (and
  /// where), nested too deep, or a key repeated.
  static func unreadable(_ bytes: [UInt8], _ error: JSONText.Error) -> String {
    if error.duplicateKey != nil { return "the document is refused: \(error.description)" }
    if error.tooDeep {
      return "the document is nested more than \(JSONText.maximumDepth) deep (at byte \(error.offset))"
    }
    return "the document is not valid JSON: \(JSONDiagnosis.reason(bytes) ?? error.description)"
  }

  /// The version: a whole number from 1 to 9223372036854775807, read as written.
  static func readVersion(_ value: JSONValue?) -> Result<Int64, FleetRefusal> {
    guard let value else { return .failure(FleetRefusal(version: nil, "the document has no version")) }
    let shown = (value.numberText ?? "").quotedForMessage
    let reason: String
    switch value.exactInteger {
    case .integer(let number) where number > 0: return .success(number)
    case .integer: reason = "version \(shown) is not above 0; count versions from 1"
    case .notWhole: reason = "version \(shown) is not a whole number"
    case .tooLarge: reason = "version \(shown) is larger than the largest version, \(Int64.max)"
    case .notNumber:
      let article = ["array", "object"].contains(value.typeName) ? "an" : "a"
      reason = "version must be a whole number above 0, not \(article) \(value.typeName)"
    }
    return .failure(FleetRefusal(version: nil, reason))
  }

  /// What the document says, whatever its version or the order of its lists: two documents
  /// with the same content have the same digest. It covers the keys, so it stays in the store
  /// and is never shown.
  var contentDigest: String {
    var entries: [[UInt8]] = []
    for pairing in pairings { entries.append(Array(("p " + pairing.json.compactText).utf8)) }
    for keyed in keyPairings {
      let label = keyed.pairing.label.map { " " + $0 } ?? ""
      switch keyed.scheme {
      case .eid(let key, let k, let clock):
        entries.append(Array("e \(k) \(clock) \(keyed.pairing.deviceId)\(label) ".utf8) + key.bytes)
      case .irk(let key):
        entries.append(Array("r \(keyed.pairing.deviceId)\(label) ".utf8) + key.bytes)
      }
    }
    for setting in settings {
      entries.append(Array("s \(setting.section).\(setting.key)=\(setting.value)".utf8))
    }
    // Each entry behind its length, so no two lists of entries run together into the same bytes.
    var bytes: [UInt8] = []
    for entry in entries.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
      bytes += withUnsafeBytes(of: UInt32(entry.count).bigEndian, Array.init) + entry
    }
    defer {
      bytes.withUnsafeMutableBytes { SecretBytes.wipe($0) }
      for index in entries.indices { entries[index].withUnsafeMutableBytes { SecretBytes.wipe($0) } }
    }
    return Hex.encode(SHA256.hash(bytes))
  }
}

extension ScenarioKeyPairing.Scheme {
  /// The scheme and its key's bytes: two pairings of one key are one key, whatever their clocks.
  fileprivate var keyIdentity: [UInt8] {
    switch self {
    case .eid(let key, _, _): [0] + key.bytes
    case .irk(let key): [1] + key.bytes
    }
  }
}

/// Why a desired document was not applied: the reason the reported document gives.
public struct FleetRefusal: Error, Hashable, Sendable {
  /// The document's version, when it could be read.
  public var version: Int64?
  public var reason: String
  public init(version: Int64?, _ reason: String) {
    self.version = version
    self.reason = reason
  }
}

/// The reported documents (docs/fleet.md).
enum FleetReport {
  static func applied(_ version: Int64) -> [UInt8] {
    Array(JSONValue.object(["version": .int(version), "state": .string("applied")]).compactText.utf8)
  }

  static func pending(_ version: Int64) -> [UInt8] {
    Array(
      JSONValue.object([
        "version": .int(version), "state": .string("pending"), "reason": .string("a trip is in progress"),
      ]).compactText.utf8)
  }

  static func refused(_ refusal: FleetRefusal) -> [UInt8] {
    Array(
      JSONValue.object([
        "version": refusal.version.map { .int($0) } ?? .null, "state": .string("refused"),
        "reason": .string(refusal.reason),
      ]).compactText.utf8)
  }
}
