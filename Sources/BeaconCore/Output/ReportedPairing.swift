#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A pairing as the `Pairings` and `Pair` replies, `pairs --json`, the fleet's beacon report and
/// the fleet document's digest give it: its identity pattern (`uuid`, `major`, `minor`; null for
/// a pairing by key, whose nil UUID identifies nothing), `deviceId`, `label`, how a beacon must
/// prove it (`authentication`), a pairing by key's number (`pairing`, never its key), and where
/// it came from (`source`: `fleet` or `local`) where the list says.
public struct ReportedPairing: Sendable, Equatable {
  public enum Key: String { case uuid, major, minor, deviceId, label, authentication, pairing, source }

  /// Where a pairing came from (docs/fleet.md).
  public enum Source: String, Sendable, Equatable {
    /// From the fleet's desired document.
    case fleet
    /// Paired on the box.
    case local
  }

  public var pairing: Pairing
  public var source: Source?

  public init(_ pairing: Pairing, source: Source? = nil) {
    self.pairing = pairing
    self.source = source
  }

  public var fields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.add(.uuid, pairing.key == nil ? .string(pairing.uuid.uuidString) : .null)
    w.add(.major, .of(pairing.major.map(Int.init)))
    w.add(.minor, .of(pairing.minor.map(Int.init)))
    w.add(.deviceId, .string(pairing.deviceId.rawValue))
    w.add(.label, .of(pairing.label))
    w.add(.authentication, .string(pairing.authentication.rawValue))
    w.omittable(.pairing, pairing.key.map { .int($0.pairing) })
    w.omittable(.source, source.map { .string($0.rawValue) })
    return w.fields
  }

  public var json: JSONValue { .object(Dictionary(fields, uniquingKeysWith: { $1 })) }

  /// Reads one pairing of a list; every field is checked by the identifier types' rules.
  public init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    let deviceId = try r.required(.deviceId, FieldValue.deviceID)
    let label = try r.optional(.label, omittable: true, FieldValue.string)
    source = try r.optional(.source, omittable: true, FieldValue.word)
    let authentication: Authentication =
      try r.optional(.authentication, omittable: true, FieldValue.word) ?? .none
    if let number = try r.optional(.pairing, omittable: true, FieldValue.int64) {
      let scheme: KeyedIdentity.Scheme
      switch authentication {
      case .eid: scheme = .eid
      case .rpa: scheme = .rpa
      case .none:
        throw FieldError(path: r.path(.authentication), problem: .unknownValue(authentication.rawValue))
      }
      pairing = Pairing(key: KeyedIdentity(scheme: scheme, pairing: number), deviceId: deviceId, label: label)
      return
    }
    let uuid = try r.required(.uuid) { (value, path) throws(FieldError) in
      let text = try FieldValue.string(value, path)
      guard let uuid = UUID(uuidString: text) else {
        throw FieldError(path: path, problem: .unknownValue(text))
      }
      return uuid
    }
    func number(_ key: Key) throws(FieldError) -> UInt16? {
      try r.optional(key, omittable: true) { (value, path) throws(FieldError) in
        let n = try FieldValue.int64(value, path)
        guard let fits = UInt16(exactly: n) else {
          throw FieldError(path: path, problem: .unknownValue(String(n)))
        }
        return fits
      }
    }
    pairing = Pairing(
      uuid: uuid, major: try number(.major), minor: try number(.minor), deviceId: deviceId,
      label: label)
  }
}
