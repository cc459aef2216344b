/// A scenario's pairing by key (docs/DESIGN.md, Contracts): the key as the file gives it, for
/// the CLI to build the `BeaconAuthenticator` from. BeaconCore does no cryptography; it only
/// carries the bytes, and never prints them. The fleet's desired document (BridgeDaemon's
/// `FleetDocument`) reads its pairings by key with the same parser.
public struct ScenarioKeyPairing: Hashable, Sendable {
  /// Sixteen bytes: an Eddystone-EID identity key or an IRK. Not printed.
  public struct Key: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
  {
    public let bytes: [UInt8]
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: []) }
  }

  public enum Scheme: Hashable, Sendable {
    /// `beaconClock` is the beacon's 32-bit clock at scenario time 0.
    case eid(identityKey: Key, rotationExponent: UInt8, beaconClock: UInt32)
    case irk(Key)
  }

  /// The pairing the key proves (`Pairing.key` names it).
  public var pairing: Pairing
  public var scheme: Scheme
}

extension Scenario {
  /// A top-level pairing with `eid` or `irk`; nil for a pairing by identity. A key is 32 hex
  /// digits; errors name the field and never repeat the key. `number` names the pairing until a
  /// store gives it its own.
  public static func keyPairing(_ value: JSONValue, number: Int64, at path: String) throws(ScenarioError)
    -> ScenarioKeyPairing?
  {
    guard let o = value.objectValue, o["eid"] != nil || o["irk"] != nil else { return nil }
    guard o["eid"] == nil || o["irk"] == nil else { throw ScenarioError("\(path) has both eid and irk") }
    for key in o.keys where !["eid", "irk", "deviceId", "label"].contains(key) {
      throw ScenarioError(
        "\(path) has an unknown key \"\(key)\" (a pairing by key has eid or irk, deviceId, label)")
    }
    func key(_ value: JSONValue?, at field: String) throws(ScenarioError) -> ScenarioKeyPairing.Key {
      guard let text = value?.stringValue, text.utf8.count == 32, let bytes = Hex.decode(text),
        bytes.count == 16
      else { throw ScenarioError("\(field) must be 32 hex digits (16 bytes)") }
      return ScenarioKeyPairing.Key(bytes: bytes)
    }
    let scheme: ScenarioKeyPairing.Scheme
    let keyed: KeyedIdentity
    if let eid = o["eid"] {
      let at = "\(path).eid"
      guard let fields = eid.objectValue else { throw ScenarioError("\(at) must be an object") }
      for name in fields.keys where !["identityKey", "rotationExponent", "beaconClock"].contains(name) {
        throw ScenarioError(
          "\(at) has an unknown key \"\(name)\" (identityKey, rotationExponent, beaconClock)")
      }
      let identityKey = try key(fields["identityKey"], at: "\(at).identityKey")
      guard let k = fields["rotationExponent"]?.intValue, (0...15).contains(k) else {
        throw ScenarioError("\(at).rotationExponent must be a whole number from 0 to 15")
      }
      guard let clock = fields["beaconClock"]?.intValue, (0...Int64(UInt32.max)).contains(clock) else {
        throw ScenarioError("\(at).beaconClock must be a whole number from 0 to 4294967295")
      }
      scheme = .eid(identityKey: identityKey, rotationExponent: UInt8(k), beaconClock: UInt32(clock))
      keyed = KeyedIdentity(scheme: .eid, pairing: number)
    } else {
      scheme = .irk(try key(o["irk"], at: "\(path).irk"))
      keyed = KeyedIdentity(scheme: .rpa, pairing: number)
    }
    guard let deviceText = o["deviceId"]?.stringValue else {
      throw ScenarioError("\(path).deviceId must be a string")
    }
    var label: String?
    if let l = o["label"], l != .null {
      guard let text = l.stringValue else { throw ScenarioError("\(path).label must be a string") }
      label = text
    }
    do throws(IdentifierError) {
      let device = try DeviceID(deviceText)
      if let label { try PairingLabel.check(label) }
      return ScenarioKeyPairing(pairing: Pairing(key: keyed, deviceId: device, label: label), scheme: scheme)
    } catch {
      throw ScenarioError("\(path): \(error.description)")
    }
  }
}
