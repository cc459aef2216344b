import BeaconCore

#if canImport(Glibc)
  import Glibc
#endif

/// `[MQTT]`: how the MQTT sink publishes (docs/upload.md "MQTT").
public struct MQTTOptions: Hashable, Sendable {
  /// The topic template; `{deviceId}` is replaced by the batch's device ID.
  public var topic = "fleet/{deviceId}/trips"
  /// The MQTT client ID, fixed so that the broker keeps the session; unset: `beaconbridge-<hostname>`.
  public var clientId: String?
  public var username: String?
  /// A file holding the password (the token-file rule: one line, not readable by others).
  public var passwordFile: String?
  /// Seconds between keep-alive pings.
  public var keepAlive = 60
  /// Seconds the broker keeps the session after a disconnect.
  public var sessionExpiry = 86_400

  public init() {}

  public static let keys = ["Topic", "ClientId", "Username", "PasswordFile", "KeepAlive", "SessionExpiry"]
  public static let keepAliveRule = SettingNumber(5...3600, unit: "seconds", whole: true)
  public static let sessionExpiryRule = SettingNumber(0...4_294_967_295, unit: "seconds", whole: true)

  static var defaultClientId: String {
    var name = [CChar](repeating: 0, count: 256)
    gethostname(&name, name.count - 1)
    let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return "beaconbridge-" + (host.isEmpty ? "unknown" : host)
  }

  mutating func set(_ key: String, to value: String) throws(ConfigurationError) {
    switch key {
    case "Topic":
      guard !value.isEmpty, !value.contains("+"), !value.contains("#"), value.utf8.count <= 1024 else {
        throw ConfigurationError(
          "Topic must be a topic name without + or # (wildcards cannot be published to)")
      }
      topic = value
    case "ClientId":
      guard (1...128).contains(value.utf8.count), value.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
        throw ConfigurationError("ClientId must be 1 to 128 visible ASCII characters")
      }
      clientId = value
    case "Username":
      username = value.isEmpty ? nil : value
    case "PasswordFile":
      guard value.hasPrefix("/") else { throw ConfigurationError("PasswordFile must be an absolute path") }
      passwordFile = value
    case "KeepAlive":
      do { keepAlive = Int(try Self.keepAliveRule.parse("KeepAlive", value)) } catch {
        throw ConfigurationError(error.description)
      }
    case "SessionExpiry":
      do { sessionExpiry = Int(try Self.sessionExpiryRule.parse("SessionExpiry", value)) } catch {
        throw ConfigurationError(error.description)
      }
    default:
      throw ConfigurationError("unknown key \(key) in [MQTT] (known: \(Self.keys.joined(separator: ", ")))")
    }
  }
}
