/// A beacon's identity as every output reports it (event lines, the daemon's `Status`, the
/// `BeaconHealth` signal, the upload body): `kind`, an iBeacon's or AltBeacon's `uuid`, `major`
/// and `minor` (null for the others), an Eddystone-UID's `namespace` and `instance`, a pairing
/// by key's number (`pairing`), and how it was proven (`authentication`).
public struct ReportedIdentity: Sendable, Equatable {
  public enum Key: String { case kind, uuid, major, minor, namespace, instance, pairing, authentication }

  public var kind: String
  public var uuid: String?
  public var major: Int?
  public var minor: Int?
  public var namespace: String?
  public var instance: String?
  public var pairing: Int64?
  public var authentication: String

  public init(
    kind: String, uuid: String? = nil, major: Int? = nil, minor: Int? = nil, namespace: String? = nil,
    instance: String? = nil, pairing: Int64? = nil, authentication: String
  ) {
    self.kind = kind
    self.uuid = uuid
    self.major = major
    self.minor = minor
    self.namespace = namespace
    self.instance = instance
    self.pairing = pairing
    self.authentication = authentication
  }

  public init(_ id: BeaconID) {
    kind = id.kind
    authentication = id.authentication.rawValue
    switch id {
    case .iBeacon(let i), .altBeacon(let i):
      uuid = i.uuid.uuidString
      major = Int(i.major)
      minor = Int(i.minor)
    case .eddystone(let ns, let inst):
      namespace = Hex.encode(ns)
      instance = Hex.encode(inst)
    case .keyed(let k):
      pairing = k.pairing
    }
  }

  /// `UUID major/minor`, or nil without a UUID.
  public var text: String? { uuid.map { "\($0) \(major ?? 0)/\(minor ?? 0)" } }

  /// kind, uuid, major, minor, then namespace and instance or pairing when the identity has
  /// them, then authentication.
  public var fields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.add(.kind, .string(kind))
    w.add(.uuid, .of(uuid))
    w.add(.major, .of(major))
    w.add(.minor, .of(minor))
    w.omittable(.namespace, namespace.map { .string($0) })
    w.omittable(.instance, instance.map { .string($0) })
    w.omittable(.pairing, pairing.map { .int($0) })
    w.add(.authentication, .string(authentication))
    return w.fields
  }

  /// The same keys null, where no beacon is linked (a TLM heard before its beacon).
  public static let nullFields: [(key: String, value: JSONValue)] = {
    var w = FieldWriter<Key>()
    for key in [Key.kind, .uuid, .major, .minor, .authentication] { w.add(key, .null) }
    return w.fields
  }()

  /// Where a trip has no beacon (`tripTagged` unresolved): the identity's keys but `kind`, null.
  public static let unresolvedFields: [(key: String, value: JSONValue)] = {
    var w = FieldWriter<Key>()
    for key in [Key.uuid, .major, .minor, .authentication] { w.add(key, .null) }
    return w.fields
  }()

  public init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    kind = try r.string(.kind)
    uuid = try r.optional(.uuid, FieldValue.string)
    major = try r.optional(.major, FieldValue.int)
    minor = try r.optional(.minor, FieldValue.int)
    namespace = try r.optional(.namespace, omittable: true, FieldValue.string)
    instance = try r.optional(.instance, omittable: true, FieldValue.string)
    pairing = try r.optional(.pairing, omittable: true, FieldValue.int64)
    authentication = try r.string(.authentication)
  }
}
