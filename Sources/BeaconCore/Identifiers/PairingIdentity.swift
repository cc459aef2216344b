#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The beacons a pairing matches: an iBeacon proximity UUID, and a major and minor from 0 to 65535
/// each, where an absent major or minor matches any value. A minor needs a major.
///
/// An out-of-range number is an error, never a wildcard and never clamped: every door (CLI, D-Bus,
/// scenario) gives it the same refusal. D-Bus's `-1` for "any" is the wire's spelling of absent and
/// is mapped before this type sees it.
public struct PairingIdentity: Hashable, Sendable {
  public let uuid: UUID
  public let major: UInt16?
  public let minor: UInt16?

  static let numberRule = "must be a whole number from 0 to 65535"

  public init(uuid: UUID, major: Int?, minor: Int?) throws(IdentifierError) {
    func part(_ name: String, _ value: Int?) throws(IdentifierError) -> UInt16? {
      guard let value else { return nil }
      guard let n = UInt16(exactly: value) else {
        throw IdentifierError(field: name, value: String(value), rule: Self.numberRule)
      }
      return n
    }
    let major = try part("major", major)
    let minor = try part("minor", minor)
    if major == nil, minor != nil {
      throw IdentifierError(
        field: "minor", value: String(minor ?? 0),
        rule: "needs a major (a wildcard major with a fixed minor is ambiguous)")
    }
    self.uuid = uuid
    self.major = major
    self.minor = minor
  }

  /// From text as typed: the UUID in its usual form, major and minor in plain decimal.
  public init(uuid: String, major: String?, minor: String?) throws(IdentifierError) {
    guard let parsed = UUID(uuidString: uuid) else {
      throw IdentifierError(
        field: "UUID", value: uuid, rule: "is not a UUID like E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
    }
    func number(_ name: String, _ text: String?) throws(IdentifierError) -> Int? {
      guard let text else { return nil }
      // Plain decimal only: no sign, no hex, at most 5 digits, so no overflow either.
      guard !text.isEmpty, text.utf8.count <= 5, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
        let n = Int(text)
      else { throw IdentifierError(field: name, value: text, rule: Self.numberRule) }
      return n
    }
    try self.init(uuid: parsed, major: try number("major", major), minor: try number("minor", minor))
  }
}
