#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The identity of an iBeacon (Apple) or AltBeacon (Radius Networks): a 16-byte proximity UUID,
/// a major and a minor. AltBeacon's id1/id2/id3 use the same layout.
public struct BeaconIdentity: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The UUID's 16 bytes as two words, in memory order (bytes 0–7, 8–15): equal words, equal
  /// UUIDs. Stored this way rather than as a `UUID` because an identity is built for every
  /// advertisement heard and compared on every lookup: `UUID(uuid:)` is a call into Foundation
  /// with the 16 bytes passed one by one, and reading the bytes of a `UUID` back as words copied
  /// them byte by byte (callgrind). `uuid` builds the `UUID` when it is asked for.
  var uuidLow: UInt64
  var uuidHigh: UInt64
  public var major: UInt16
  public var minor: UInt16

  public var uuid: UUID {
    get { UUID(uuid: unsafeBitCast((uuidLow, uuidHigh), to: uuid_t.self)) }
    set { (uuidLow, uuidHigh) = Self.words(newValue) }
  }

  public init(uuid: UUID, major: UInt16, minor: UInt16) {
    (uuidLow, uuidHigh) = Self.words(uuid)
    self.major = major
    self.minor = minor
  }

  /// An identity whose UUID's bytes, read as two words in memory order, are `uuidLow` and
  /// `uuidHigh`.
  @inline(__always)
  init(uuidLow: UInt64, uuidHigh: UInt64, major: UInt16, minor: UInt16) {
    self.uuidLow = uuidLow
    self.uuidHigh = uuidHigh
    self.major = major
    self.minor = minor
  }

  /// Hashes the UUID as two words rather than 16 separate bytes: presence hashes an identity on
  /// every sighting, and `UUID`'s own hashing feeds the hasher byte by byte.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(uuidLow)
    hasher.combine(uuidHigh)
    hasher.combine(UInt32(major) << 16 | UInt32(minor))
  }

  /// The UUID's 16 bytes as two words, in memory order: equal words, equal UUIDs.
  @inline(__always)
  var uuidWords: (low: UInt64, high: UInt64) { (uuidLow, uuidHigh) }

  /// A UUID's 16 bytes as two words, in memory order.
  static func words(_ uuid: UUID) -> (low: UInt64, high: UInt64) {
    withUnsafeBytes(of: uuid.uuid) { raw in
      (
        raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
        raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
      )
    }
  }

  /// By UUID string, then major, then minor. The UUID strings are compared through the bytes
  /// (most significant first, as the words byte-swapped): the uppercase hex of a fixed-length
  /// UUID orders as its bytes do, and `uuidString` formats through `snprintf`.
  public static func < (lhs: BeaconIdentity, rhs: BeaconIdentity) -> Bool {
    (lhs.uuidLow.byteSwapped, lhs.uuidHigh.byteSwapped, lhs.major, lhs.minor)
      < (rhs.uuidLow.byteSwapped, rhs.uuidHigh.byteSwapped, rhs.major, rhs.minor)
  }

  public var description: String { "\(uuid.uuidString) \(major)/\(minor)" }
}

/// An iBeacon frame: manufacturer data for Apple (0x004C) starting 0x02 0x15, then a 16-byte
/// UUID, major and minor (big-endian), and the measured power at 1 m as int8.
public struct IBeaconFrame: Hashable, Sendable {
  public var identity: BeaconIdentity
  /// RSSI at 1 m, in dBm (two's complement int8 on the air).
  public var measuredPower: Int8

  public init(identity: BeaconIdentity, measuredPower: Int8) {
    self.identity = identity
    self.measuredPower = measuredPower
  }
}

/// An AltBeacon frame (AltBeacon specification 1.0): manufacturer data with any company ID,
/// beacon code 0xBEAC, a 20-byte beacon ID (id1 16 bytes, id2 and id3 2 bytes each), the
/// reference RSSI as int8 and one manufacturer-reserved byte.
public struct AltBeaconFrame: Hashable, Sendable {
  public var companyID: UInt16
  public var identity: BeaconIdentity
  public var referenceRSSI: Int8
  /// The manufacturer-reserved byte; nil when the beacon left it out (accepted, see
  /// `BeaconFrameParser`).
  public var reserved: UInt8?

  public init(companyID: UInt16, identity: BeaconIdentity, referenceRSSI: Int8, reserved: UInt8?) {
    self.companyID = companyID
    self.identity = identity
    self.referenceRSSI = referenceRSSI
    self.reserved = reserved
  }
}

/// Eddystone-UID (frame type 0x00): a 10-byte namespace and a 6-byte instance.
public struct EddystoneUIDFrame: Hashable, Sendable {
  /// Calibrated TX power at 0 m, int8 dBm.
  public var txPower: Int8
  public var namespace: [UInt8]
  public var instance: [UInt8]

  public init(txPower: Int8, namespace: [UInt8], instance: [UInt8]) {
    self.txPower = txPower
    self.namespace = namespace
    self.instance = instance
  }
}

/// Eddystone-URL (frame type 0x10): a compressed URL.
public struct EddystoneURLFrame: Hashable, Sendable {
  public var txPower: Int8
  public var url: String

  public init(txPower: Int8, url: String) {
    self.txPower = txPower
    self.url = url
  }
}

/// Eddystone-TLM (frame type 0x20), unencrypted version 0x00.
public struct EddystoneTLMFrame: Hashable, Sendable {
  public var batteryMillivolts: UInt16
  /// Beacon temperature in °C (8.8 fixed point on the air); nil when the beacon sends 0x8000.
  public var temperature: Double?
  public var advertisementCount: UInt32
  /// Time since power-on, in seconds (0.1 s resolution on the air).
  public var uptime: Double

  public init(batteryMillivolts: UInt16, temperature: Double?, advertisementCount: UInt32, uptime: Double) {
    self.batteryMillivolts = batteryMillivolts
    self.temperature = temperature
    self.advertisementCount = advertisementCount
    self.uptime = uptime
  }
}

/// Eddystone-EID (frame type 0x30): the ranging byte (TX power at 0 m) and an 8-byte ephemeral
/// identifier that only a resolver with the beacon's identity key can name (docs/authentication.md).
public struct EddystoneEIDFrame: Hashable, Sendable {
  public var txPower: Int8
  /// The 8 bytes, most significant first.
  public var eid: UInt64

  public init(txPower: Int8, eid: UInt64) {
    self.txPower = txPower
    self.eid = eid
  }
}

/// A well-formed frame of a family this project knows but does not decode: Eddystone EID (0x30)
/// of another length than the frame's, or that no pairing resolved, encrypted TLM (0x20 version
/// 0x01), Google Find Hub (0x40, 0x41) and other types under service 0xFEAA. Such frames are
/// counted per `kind`, never rejected as malformed: a vehicle full of trackers would otherwise
/// flood the log.
public struct IgnoredFrame: Hashable, Sendable {
  /// The Eddystone frame type byte.
  public var frameType: UInt8
  /// The byte after the type, for TLM (the TLM version); nil for other types.
  public var version: UInt8?

  public init(frameType: UInt8, version: UInt8? = nil) {
    self.frameType = frameType
    self.version = version
  }

  /// The name counted in `status` (`ignoredFrames`): `eddystoneEID`, `eddystoneTLMEncrypted`,
  /// `eddystoneFindHub`, or `eddystone0xNN` (NN the frame type; `eddystoneTLMv0xNN` for an unknown
  /// TLM version).
  public var kind: String {
    switch frameType {
    case 0x30: return "eddystoneEID"
    case 0x20 where version == 0x01: return "eddystoneTLMEncrypted"
    case 0x20: return "eddystoneTLMv0x\(Hex.byte(version ?? 0))"
    case 0x40, 0x41: return "eddystoneFindHub"
    default: return "eddystone0x\(Hex.byte(frameType))"
    }
  }
}

/// A beacon frame found in an advertisement.
public enum BeaconFrame: Hashable, Sendable {
  case iBeacon(IBeaconFrame)
  case altBeacon(AltBeaconFrame)
  case eddystoneUID(EddystoneUIDFrame)
  case eddystoneURL(EddystoneURLFrame)
  case eddystoneTLM(EddystoneTLMFrame)
  /// An identity only a key names: tracked once the pipeline's authenticator resolves it.
  case eddystoneEID(EddystoneEIDFrame)
  /// Known but not decoded: counted, not tracked.
  case ignored(IgnoredFrame)

  /// The identity presence is tracked by, for frames that carry one. URL and TLM frames carry
  /// none: they describe whoever sent them. An EID frame's identity is its pairing's, which
  /// only the authenticator knows.
  public var beaconID: BeaconID? {
    switch self {
    case .iBeacon(let f): .iBeacon(f.identity)
    case .altBeacon(let f): .altBeacon(f.identity)
    case .eddystoneUID(let f): .eddystone(namespace: f.namespace, instance: f.instance)
    case .eddystoneURL, .eddystoneTLM, .eddystoneEID, .ignored: nil
    }
  }

  /// The calibrated power used for distance: iBeacon's measured power and AltBeacon's reference
  /// RSSI are at 1 m; Eddystone's TX power is at 0 m, and 41 dBm is the loss over the first metre
  /// (Eddystone protocol specification, "Tx Power").
  @inline(__always)
  public var powerAt1m: Int? {
    switch self {
    case .iBeacon(let f): Int(f.measuredPower)
    case .altBeacon(let f): Int(f.referenceRSSI)
    case .eddystoneUID(let f): Int(f.txPower) - 41
    case .eddystoneURL(let f): Int(f.txPower) - 41
    case .eddystoneEID(let f): Int(f.txPower) - 41
    case .eddystoneTLM, .ignored: nil
    }
  }
}

/// What presence is tracked by.
public enum BeaconID: Hashable, Comparable, Sendable, CustomStringConvertible {
  case iBeacon(BeaconIdentity)
  case altBeacon(BeaconIdentity)
  case eddystone(namespace: [UInt8], instance: [UInt8])
  /// A pairing by key, proven by a resolved EID or RPA: the identity is the pairing itself.
  case keyed(KeyedIdentity)

  /// The UUID/major/minor identity, for iBeacon and AltBeacon. Pairings match on it.
  public var identity: BeaconIdentity? {
    switch self {
    case .iBeacon(let i), .altBeacon(let i): i
    case .eddystone, .keyed: nil
    }
  }

  /// Whether a key proved the identity (not `none`).
  @inline(__always)
  public var isKeyed: Bool {
    if case .keyed = self { return true }
    return false
  }

  /// How the identity was proven: `none` for one sent in clear.
  public var authentication: Authentication {
    switch self {
    case .keyed(let k): k.authentication
    case .iBeacon, .altBeacon, .eddystone: .none
    }
  }

  public var kind: String {
    switch self {
    case .iBeacon: "iBeacon"
    case .altBeacon: "altBeacon"
    case .eddystone: "eddystoneUID"
    case .keyed(let k): k.scheme == .eid ? "eddystoneEID" : "resolvablePrivateAddress"
    }
  }

  public var description: String {
    switch self {
    case .iBeacon(let i): "iBeacon \(i)"
    case .altBeacon(let i): "AltBeacon \(i)"
    case .eddystone(let ns, let inst): "Eddystone \(Hex.encode(ns))/\(Hex.encode(inst))"
    case .keyed(let k): k.description
    }
  }

  private var sortKey: String {
    switch self {
    case .iBeacon(let i): "0 \(i.uuid.uuidString) \(i.major) \(i.minor)"
    case .altBeacon(let i): "1 \(i.uuid.uuidString) \(i.major) \(i.minor)"
    case .eddystone(let ns, let inst): "2 \(Hex.encode(ns)) \(Hex.encode(inst))"
    case .keyed(let k): "3 \(k.scheme.rawValue) \(String(k.pairing))"
    }
  }

  /// By `sortKey`. For two iBeacon or two AltBeacon identities, without building it: the keys
  /// then differ first in the UUID (compared through its bytes, as in `BeaconIdentity`), else in
  /// "major minor" as decimal text (so 10 sorts before 9, as the key always had it).
  public static func < (lhs: BeaconID, rhs: BeaconID) -> Bool {
    switch (lhs, rhs) {
    case (.iBeacon(let a), .iBeacon(let b)), (.altBeacon(let a), .altBeacon(let b)):
      let x = (a.uuidLow.byteSwapped, a.uuidHigh.byteSwapped)
      let y = (b.uuidLow.byteSwapped, b.uuidHigh.byteSwapped)
      if x != y { return x < y }
      return "\(a.major) \(a.minor)" < "\(b.major) \(b.minor)"
    default:
      return lhs.sortKey < rhs.sortKey
    }
  }

  /// The order `<` gives (tests compare it with the fast one).
  static func sortKeyOrder(_ lhs: BeaconID, _ rhs: BeaconID) -> Bool { lhs.sortKey < rhs.sortKey }
}
