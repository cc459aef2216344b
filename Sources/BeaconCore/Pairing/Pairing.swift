#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Binds a beacon identity to a device ID: the vehicle unit serial number or driver tag ID that
/// the backend knows. `major` and `minor` may be left out to match any value.
public struct Pairing: Hashable, Sendable, Codable {
  public var uuid: UUID
  public var major: UInt16?
  public var minor: UInt16?
  public var deviceId: String
  public var label: String?

  public init(uuid: UUID, major: UInt16?, minor: UInt16?, deviceId: String, label: String? = nil) {
    self.uuid = uuid
    self.major = major
    self.minor = minor
    self.deviceId = deviceId
    self.label = label
  }

  public func matches(_ identity: BeaconIdentity) -> Bool {
    identity.uuid == uuid && (major == nil || major == identity.major)
      && (minor == nil || minor == identity.minor)
  }

  /// How specific the pattern is; the most specific pairing wins.
  public var specificity: Int { (major == nil ? 0 : 2) + (minor == nil ? 0 : 1) }

  /// A pairing from validated parts: the one way the doors (CLI, D-Bus, scenario) build one.
  public init(identity: PairingIdentity, deviceId: DeviceID, label: String? = nil) {
    self.init(
      uuid: identity.uuid, major: identity.major, minor: identity.minor, deviceId: deviceId.rawValue,
      label: label)
  }

  /// Checks every field by the identifier types' rules (a pairing read back from the store or
  /// built in code): the device ID, the label, and a minor only with a major.
  public func validate() throws(IdentifierError) {
    _ = try DeviceID(deviceId)
    if let label { try PairingLabel.check(label) }
    _ = try PairingIdentity(uuid: uuid, major: major.map(Int.init), minor: minor.map(Int.init))
  }
}

/// The set of pairings, with lookup by beacon identity.
public struct PairingSet: Hashable, Sendable {
  public private(set) var pairings: [Pairing]

  public init(_ pairings: [Pairing] = []) {
    self.pairings = pairings
  }

  /// The pairing for a beacon: the most specific match; between equally specific ones, the
  /// lowest device ID, so the choice never depends on insertion order.
  public func pairing(for id: BeaconID) -> Pairing? {
    guard let identity = id.identity else { return nil }
    // A loop rather than filter and min: this runs for every sighting, and filter allocates.
    var best: Pairing?
    for pairing in pairings where pairing.matches(identity) {
      if let b = best,
        pairing.specificity != b.specificity
          ? pairing.specificity <= b.specificity : pairing.deviceId >= b.deviceId
      {
        continue
      }
      best = pairing
    }
    return best
  }

  /// Adds or replaces the pairing with the same identity pattern.
  public mutating func upsert(_ pairing: Pairing) {
    pairings.removeAll { $0.uuid == pairing.uuid && $0.major == pairing.major && $0.minor == pairing.minor }
    pairings.append(pairing)
  }

  /// Removes the pairings for a device ID; returns how many.
  @discardableResult
  public mutating func remove(deviceId: String) -> Int {
    let before = pairings.count
    pairings.removeAll { $0.deviceId == deviceId }
    return before - pairings.count
  }
}
