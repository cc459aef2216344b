#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Binds a beacon identity to a device ID: the vehicle unit serial number or driver tag ID that
/// the backend knows. `major` and `minor` may be left out to match any value.
///
/// A pairing by key (`key` set: an Eddystone-EID identity key or an IRK, held by the
/// `BeaconAuthenticator`, never here) matches only the `BeaconID.keyed` sightings its key
/// resolves; its `uuid` is the nil UUID and matches nothing.
public struct Pairing: Hashable, Sendable, Codable {
  public var uuid: UUID
  public var major: UInt16?
  public var minor: UInt16?
  /// Checked at the door that built the pairing (`DeviceID`), never again.
  public var deviceId: DeviceID
  public var label: String?
  public var key: KeyedIdentity?

  public init(uuid: UUID, major: UInt16?, minor: UInt16?, deviceId: DeviceID, label: String? = nil) {
    self.uuid = uuid
    self.major = major
    self.minor = minor
    self.deviceId = deviceId
    self.label = label
  }

  /// A pairing by key for the pairing `key` names.
  public init(key: KeyedIdentity, deviceId: DeviceID, label: String? = nil) {
    self.init(
      uuid: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), major: nil, minor: nil,
      deviceId: deviceId, label: label)
    self.key = key
  }

  /// How a beacon must prove this pairing's identity.
  public var authentication: Authentication { key?.authentication ?? .none }

  public func matches(_ identity: BeaconIdentity) -> Bool {
    key == nil && identity.uuid == uuid && (major == nil || major == identity.major)
      && (minor == nil || minor == identity.minor)
  }

  /// How specific the pattern is; the most specific pairing wins.
  public var specificity: Int { (major == nil ? 0 : 2) + (minor == nil ? 0 : 1) }

  /// A pairing from validated parts: the one way the doors (CLI, D-Bus, scenario) build one.
  public init(identity: PairingIdentity, deviceId: DeviceID, label: String? = nil) {
    self.init(
      uuid: identity.uuid, major: identity.major, minor: identity.minor, deviceId: deviceId, label: label)
  }

  /// Checks the fields the types do not hold by the identifier rules (a pairing read back from
  /// the store or built in code): the label, and a minor only with a major.
  public func validate() throws(IdentifierError) {
    if let label { try PairingLabel.check(label) }
    guard key == nil else { return }
    _ = try PairingIdentity(uuid: uuid, major: major.map(Int.init), minor: minor.map(Int.init))
  }
}

/// The set of pairings, with lookup by beacon identity.
public struct PairingSet: Hashable, Sendable {
  public private(set) var pairings: [Pairing] {
    didSet {
      (patterns, minorFilter) = Self.index(pairings)
      keyed = Self.keyedIndex(pairings)
      (exact, partial) = Self.exactIndex(patterns, pairings)
    }
  }
  /// The pairings by key, by the identity their key resolves to.
  private var keyed: [KeyedIdentity: Int]

  private static func keyedIndex(_ pairings: [Pairing]) -> [KeyedIdentity: Int] {
    var out: [KeyedIdentity: Int] = [:]
    for (i, p) in pairings.enumerated() { if let key = p.key { out[key] = i } }
    return out
  }
  /// `pairings[i]`'s identity pattern, as `pairing(for:)` compares it: the UUID as two words
  /// (`Pairing.matches` compared two `UUID`s, a call into Foundation per pairing per sighting).
  private var patterns: [Pattern]
  /// Bit `minor % 64` set for the minor of every pattern, every bit when a pattern leaves the
  /// minor out: a beacon whose bit is clear matches no pairing, which one test tells (most
  /// beacons heard are not paired, and most of those differ from the pairings in their minor).
  private var minorFilter: UInt64
  /// The patterns that give UUID, major and minor, by identity: a sighting finds its pairing in
  /// one probe however many pairings a fleet sends (a scan over them all cost each sighting
  /// about 20 instructions a pairing). A duplicate identity keeps the lowest device ID, as the
  /// scan chose. Only the `partial` patterns, which leave a field out and are few, are scanned.
  private var exact: BeaconIndex
  private var partial: [Int]

  private static func exactIndex(_ patterns: [Pattern], _ pairings: [Pairing]) -> (BeaconIndex, [Int]) {
    var table = BeaconIndex(capacity: patterns.count)
    var partial: [Int] = []
    for (i, pattern) in patterns.enumerated() {
      guard pattern.isExact else {
        if pairings[i].key == nil { partial.append(i) }
        continue
      }
      let key = pattern.exactKey(seed: table.seed)
      let same = table.find(key) { patterns[$0] == pattern }
      if let same {
        if pairings[i].deviceId < pairings[same].deviceId { table.move(key, from: same, to: i) }
      } else {
        table.insert(key, index: i)
      }
    }
    return (table, partial)
  }

  private static func index(_ pairings: [Pairing]) -> ([Pattern], UInt64) {
    let filter = pairings.reduce(0 as UInt64) { bits, pairing in
      pairing.key != nil ? bits : bits | (pairing.minor.map { 1 << ($0 & 63) } ?? ~0)
    }
    return (pairings.map(Pattern.init), filter)
  }

  /// A pairing's identity pattern: the UUID's bytes as two words, and major and minor as one
  /// word (major in the high half) under a mask that leaves out a field the pairing leaves out.
  private struct Pattern: Hashable, Sendable {
    var low: UInt64
    var high: UInt64
    var mask: UInt32
    var numbers: UInt32
    /// `Pairing.specificity`.
    var specificity: Int

    init(_ pairing: Pairing) {
      (low, high) = BeaconIdentity.words(pairing.uuid)
      mask = (pairing.major == nil ? 0 : 0xFFFF_0000) | (pairing.minor == nil ? 0 : 0xFFFF)
      numbers = (UInt32(pairing.major ?? 0) << 16 | UInt32(pairing.minor ?? 0)) & mask
      specificity = pairing.specificity
      // A pairing by key matches no identity sent in clear: a numbers word no masked value
      // equals.
      if pairing.key != nil { (mask, numbers) = (0, 1) }
    }

    /// UUID, major and minor all given (a pairing by key is not: its mask is 0).
    var isExact: Bool { mask == 0xFFFF_FFFF }

    /// The identity's key in `exact`.
    func exactKey(seed: UInt64) -> UInt64 {
      PairingSet.exactKey(low: low, high: high, numbers: numbers, seed: seed)
    }

    /// `Pairing.matches`, for an identity's UUID words and `major << 16 | minor`.
    @inline(__always)
    func matches(low: UInt64, high: UInt64, numbers: UInt32) -> Bool {
      (low ^ self.low) | (high ^ self.high) | UInt64(numbers & mask ^ self.numbers) == 0
    }
  }

  public init(_ pairings: [Pairing] = []) {
    self.pairings = pairings
    (patterns, minorFilter) = Self.index(pairings)
    keyed = Self.keyedIndex(pairings)
    (exact, partial) = Self.exactIndex(patterns, pairings)
  }

  @inline(__always)
  static func exactKey(low: UInt64, high: UInt64, numbers: UInt32, seed: UInt64) -> UInt64 {
    let a = IndexKeyMix.fold(low ^ seed ^ IndexKeyMix.p0, high ^ IndexKeyMix.p1)
    return IndexKeyMix.fold(a ^ UInt64(numbers), seed ^ IndexKeyMix.p2)
  }

  public static func == (a: PairingSet, b: PairingSet) -> Bool { a.pairings == b.pairings }

  public func hash(into hasher: inout Hasher) { hasher.combine(pairings) }

  /// The pairing for a beacon: the most specific match; between equally specific ones, the
  /// lowest device ID, so the choice never depends on insertion order.
  ///
  /// The minor filter inline, the search out of line: most sightings stop at the filter, and as
  /// one function the search's registers were saved and restored for each of them (callgrind:
  /// about 30 instructions per advertisement).
  @inline(__always)
  public func pairing(for id: BeaconID) -> Pairing? {
    guard let identity = id.identity else { return keyedPairing(for: id) }
    guard minorFilter >> (identity.minor & 63) & 1 != 0 else { return nil }
    return pairing(matching: identity)
  }

  /// `pairing(for:)` for an identity the minor filter let through.
  @inline(never)
  private func pairing(matching identity: BeaconIdentity) -> Pairing? {
    let (low, high) = identity.uuidWords
    let numbers = UInt32(identity.major) << 16 | UInt32(identity.minor)
    // An exact pattern is the most specific there is: found, it is the answer.
    if exact.count > 0 {
      let found = patterns.withUnsafeBufferPointer { patterns in
        exact.find(Self.exactKey(low: low, high: high, numbers: numbers, seed: exact.seed)) {
          patterns[$0].matches(low: low, high: high, numbers: numbers)
        }
      }
      if let found { return pairings[found] }
    }
    // A loop rather than filter and min: this runs for every sighting, and filter allocates.
    // The pairings themselves are read only for a match.
    var best = -1
    var bestSpecificity = -1
    patterns.withUnsafeBufferPointer { patterns in
      for i in partial where patterns[i].matches(low: low, high: high, numbers: numbers) {
        let specificity = patterns[i].specificity
        if best >= 0,
          specificity != bestSpecificity
            ? specificity <= bestSpecificity : pairings[i].deviceId >= pairings[best].deviceId
        {
          continue
        }
        best = i
        bestSpecificity = specificity
      }
    }
    return best >= 0 ? pairings[best] : nil
  }

  /// The pairing by key a `BeaconID.keyed` names. Apart, so that the lookup every plain
  /// sighting makes stays as small as it was.
  @inline(never)
  private func keyedPairing(for id: BeaconID) -> Pairing? {
    guard case .keyed(let key) = id, let index = keyed[key] else { return nil }
    return pairings[index]
  }

  /// Adds or replaces the pairing with the same identity pattern.
  public mutating func upsert(_ pairing: Pairing) {
    pairings.removeAll {
      $0.key == pairing.key && $0.uuid == pairing.uuid && $0.major == pairing.major
        && $0.minor == pairing.minor
    }
    pairings.append(pairing)
  }

  /// Removes the pairings for a device ID; returns how many.
  @discardableResult
  public mutating func remove(deviceId: DeviceID) -> Int {
    let before = pairings.count
    pairings.removeAll { $0.deviceId == deviceId }
    return before - pairings.count
  }
}
