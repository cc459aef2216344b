import BeaconCore

#if canImport(Glibc)
  import Glibc
#endif

/// `[MQTT]`: how the MQTT sink publishes (docs/upload.md "MQTT").
public struct MQTTOptions: Hashable, Sendable {
  /// The topic template; `{deviceId}` is replaced by the batch's device ID.
  public var topic = "fleet/{deviceId}/trips"
  /// The line each key was set on (`Topic`: for a refusal of a fleet topic that overlaps it).
  var lines = KeyLines()
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

/// How the MQTT sink connects (`[Upload] URL = mqtt://…` or `mqtts://…`, and `[MQTT]`).
public struct MQTTSettings: Hashable, Sendable {
  public var host: String
  public var port: Int
  public var tls: Bool
  public var tlsFiles: TLSFiles
  public var clientId: String
  public var username: String?
  /// A file holding the password, read with the token-file rule at connect.
  public var passwordFile: String?
  public var keepAlive: Int
  /// Seconds the broker keeps the session after a disconnect (MQTT 5 Session Expiry Interval).
  public var sessionExpiry: Int
  public var topic: String
  public var timeout: Double

  /// The broker's address from an `mqtt://host[:port]` or `mqtts://host[:port]` URL.
  public static func endpoint(_ url: String) -> (host: String, port: Int, tls: Bool)? {
    let tls: Bool
    let rest: Substring
    if url.hasPrefix("mqtts://") {
      (tls, rest) = (true, url.dropFirst(8))
    } else if url.hasPrefix("mqtt://") {
      (tls, rest) = (false, url.dropFirst(7))
    } else {
      return nil
    }
    let authority = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    guard !authority.isEmpty, !authority.contains("@") else { return nil }
    if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
      guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port) else {
        return nil
      }
      return (String(authority[..<colon]), port, tls)
    }
    return (String(authority), tls ? 8883 : 1883, tls)
  }

  /// The topic for a device: `{deviceId}` in the template replaced.
  func topic(for level: MQTTTopicLevel) -> String { topic.replacing("{deviceId}", with: level.text) }
}
