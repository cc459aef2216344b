import BeaconCore

/// A device ID as one level of an MQTT topic name (the `{deviceId}` of `[MQTT] Topic`).
///
/// `DeviceID` allows any printable text, but in a topic `/` separates levels and `+` and `#` are
/// wildcards, which a publish may not carry (MQTT 5, 4.7): a device ID holding one would publish
/// to another device's topic, or be refused by the broker. The rest of the rule (no NUL or other
/// control character, at most 128 bytes of UTF-8) `DeviceID` already holds, and the template is
/// checked for wildcards where the configuration is read.
public struct MQTTTopicLevel: Hashable, Sendable, CustomStringConvertible {
  public let text: String

  public init(_ deviceId: DeviceID) throws(IdentifierError) {
    if let bad = deviceId.rawValue.unicodeScalars.first(where: { $0 == "/" || $0 == "+" || $0 == "#" }) {
      throw IdentifierError(
        field: "device ID", value: deviceId.rawValue,
        rule:
          "cannot be in an MQTT topic: it contains \(bad), which separates topic levels or is a wildcard there; pair the beacon with a device ID without / + #, or upload over HTTP"
      )
    }
    text = deviceId.rawValue
  }

  public var description: String { text }
}
