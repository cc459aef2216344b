/// How an identity was proven (docs/authentication.md): `eid` for an Eddystone-EID resolved with
/// its pairing's identity key, `rpa` for a resolvable private address resolved with its pairing's
/// IRK, `none` for an identity sent in clear (iBeacon, AltBeacon, Eddystone-UID), which anyone can
/// copy. Every output that names a beacon carries it as `"authentication"`.
public enum Authentication: String, Hashable, Sendable, CaseIterable {
  case none
  case eid
  case rpa
}

/// A pairing by key: how the beacon proves itself (`eid` or `rpa`) and the number the integration
/// gave the pairing (the store's row; a scenario's position in its `pairings`). The key itself
/// lives only in the `BeaconAuthenticator`: BeaconCore never holds it.
public struct KeyedIdentity: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  /// The most pairings by IRK a box holds (BeaconCrypto's `RPAResolver.maximumPairings`, which
  /// says why): every door that adds one (`pair`, D-Bus `PairWithKey`, the fleet's document, a
  /// scenario) refuses one more with `irkCapSentence`.
  public static let maximumIRKPairings = 167

  /// The refusal of an IRK pairing over the cap.
  public static var irkCapSentence: String {
    "a box holds at most \(maximumIRKPairings) pairings by IRK: with more, a random private address would match one by chance more often than 1 in 100,000 (N / 2^24 for N IRKs); unpair one first, or pair the device by its Eddystone-EID key"
  }

  public enum Scheme: String, Hashable, Sendable, Codable {
    case eid
    case rpa
  }

  public var scheme: Scheme
  public var pairing: Int64

  /// By a word, not by the scheme's raw value: the synthesized hash would hash the string "eid"
  /// each time a keyed sighting is looked up (about 500 instructions of every EID advertisement).
  public func hash(into hasher: inout Hasher) {
    hasher.combine(scheme == .eid ? pairing : ~pairing)
  }

  public init(scheme: Scheme, pairing: Int64) {
    self.scheme = scheme
    self.pairing = pairing
  }

  public var authentication: Authentication {
    switch scheme {
    case .eid: .eid
    case .rpa: .rpa
    }
  }

  public static func < (a: KeyedIdentity, b: KeyedIdentity) -> Bool {
    (a.scheme.rawValue, a.pairing) < (b.scheme.rawValue, b.pairing)
  }

  public var description: String { "\(scheme.rawValue) pairing \(pairing)" }
}

/// What an authenticator made of an EID or an address.
public enum AuthenticationResult: Hashable, Sendable {
  /// Proven: a sighting of this pairing.
  case resolved(KeyedIdentity)
  /// The pairing's EID, but from a window older than the newest heard from it; or its private
  /// address, but first heard more than `rpaMaxAge` ago or before a newer one of the device:
  /// refused.
  case replay(KeyedIdentity)
  /// Not a paired beacon's (or not tried).
  case unknown
}

/// The seam between the pipeline and the keys. BeaconCore has no C and holds no key; the daemon
/// and the CLI implement this over BeaconCrypto's resolvers and hand it to the pipeline, which
/// calls it for Eddystone-EID frames and for addresses whose top two bits are 01 (resolvable
/// private addresses, Core Vol 6 Part B §1.3.2.2). Times are the pipeline's; the implementation
/// turns them into the box clock the pairings' offsets are from.
public protocol BeaconAuthenticator: Sendable {
  /// Whether any pairing has an IRK: when false, addresses are not tried at all, so a plain
  /// iBeacon from an address that happens to start with 01 costs nothing more.
  var resolvesAddresses: Bool { get }
  mutating func authenticate(eid: UInt64, at time: Timestamp) -> AuthenticationResult
  /// `time` is the pipeline's, a clock that does not step: a resolvable private address is
  /// proven only while fresh (first heard within `rpaMaxAge`), and a stale one is a `replay`.
  mutating func authenticate(address: BluetoothAddress, at time: Timestamp) -> AuthenticationResult
  /// An encrypted TLM frame (its 0xFEAA service data) from a resolved EID beacon as the plain TLM
  /// frame it carries (version 0x00, 14 bytes, for the plain TLM parser), or nil when its MIC
  /// does not verify under that beacon's key and clock.
  mutating func openTLM(serviceData: [UInt8], of identity: KeyedIdentity, at time: Timestamp) -> [UInt8]?
}

extension BluetoothAddress {
  /// Whether the top two bits are 01: the form of a resolvable private address. A public
  /// address may have them too; resolving it finds no pairing, and the answer is cached.
  @inline(__always)
  public var isResolvablePrivateForm: Bool { uint48 >> 46 == 0b01 }
}
