import BeaconCore

#if canImport(Glibc)
  import Glibc
#endif

/// `[Fleet]`: the box run from the broker (docs/fleet.md). The fleet link runs when the section
/// sets at least one key; it speaks to `URL`, or to the `[Upload]` MQTT broker with its TLS files
/// and `[MQTT]` credentials.
public struct FleetOptions: Hashable, Sendable {
  /// The box's ID as set; nil: the first 12 hex digits of `/etc/machine-id` (`resolvedBoxId`).
  public var boxId: String?
  public var statusTopic = "fleet/{boxId}/status"
  public var desiredTopic = "fleet/{boxId}/config/desired"
  public var reportedTopic = "fleet/{boxId}/config/reported"
  public var beaconsTopic = "fleet/{boxId}/beacons"
  /// `mqtt://host[:port]` or `mqtts://host[:port]`; nil: the `[Upload]` broker.
  public var url: String?
  /// Seconds between beacon reports when nothing changed.
  public var reportInterval: Double = 900
  /// Whether the file set any `[Fleet]` key: the fleet link runs only then.
  public var enabled = false
  /// The line of the first `[Fleet]` key, for problems of the section as a whole.
  var line = 0
  /// The line of each topic key set (`StatusTopic`…), for a refusal of two topics that overlap.
  var topicLines = KeyLines()

  public init() {}

  public static let keys = [
    "BoxId", "StatusTopic", "DesiredTopic", "ReportedTopic", "BeaconsTopic", "URL", "ReportInterval",
  ]
  public static let reportIntervalRule = SettingNumber(10...86_400, unit: "seconds", whole: true)
  /// The longest box ID, in bytes: a machine-id is 32 hex digits, a fleet's own IDs are shorter.
  public static let maxBoxIdBytes = 64
  public static let machineIdPath = "/etc/machine-id"

  /// The problem with `value` as a box ID, or nil: it must fit in one topic level (no `/`, no
  /// wildcard `+` or `#`), not start a `$` system topic, and be visible ASCII.
  public static func boxIdProblem(_ value: String) -> String? {
    guard !value.isEmpty else {
      return "BoxId is empty; set the box's ID, or remove the line for the machine-id"
    }
    guard value.utf8.count <= maxBoxIdBytes else {
      return "BoxId is \(value.utf8.count) bytes long, over \(maxBoxIdBytes)"
    }
    guard value.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "/" && $0 != "+" && $0 != "#" }),
      value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }), !value.hasPrefix("$")
    else {
      return
        "BoxId \(value.quotedForMessage) cannot be one MQTT topic level; use visible ASCII without /, +, # or a leading $"
    }
    return nil
  }

  /// The box ID: the one set, or the first 12 hex digits of `/etc/machine-id`; nil when neither.
  public func resolvedBoxId(machineIdPath: String = machineIdPath) -> String? {
    if let boxId { return boxId }
    guard let bytes = try? InputReader.read(machineIdPath, limit: 4096) else { return nil }
    let digits = bytes.prefix { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    guard digits.count >= 12 else { return nil }
    return String(decoding: digits.prefix(12), as: UTF8.self)
  }

  /// A topic with `{boxId}` filled in.
  public static func topic(_ template: String, boxId: String) -> String {
    template.replacing("{boxId}", with: boxId)
  }

  mutating func set(_ key: String, to value: String, line: Int) throws(ConfigurationError) {
    if !enabled {
      enabled = true
      self.line = line
    }
    switch key {
    case "BoxId":
      if let problem = Self.boxIdProblem(value) { throw ConfigurationError(problem) }
      boxId = value
    case "StatusTopic", "DesiredTopic", "ReportedTopic", "BeaconsTopic":
      guard !value.isEmpty, !value.contains("+"), !value.contains("#"), value.utf8.count <= 1024 else {
        throw ConfigurationError("\(key) must be a topic name without + or # (at most 1024 bytes)")
      }
      topicLines[key] = line
      switch key {
      case "StatusTopic": statusTopic = value
      case "DesiredTopic": desiredTopic = value
      case "ReportedTopic": reportedTopic = value
      default: beaconsTopic = value
      }
    case "URL":
      guard MQTTSettings.endpoint(value) != nil else {
        throw ConfigurationError("URL must be mqtt://host[:port] or mqtts://host[:port]")
      }
      url = value
    case "ReportInterval":
      reportInterval = try Self.reportIntervalRule.parse("ReportInterval", value)
    default:
      throw ConfigurationError("unknown key \(key) in [Fleet] (known: \(Self.keys.joined(separator: ", ")))")
    }
  }
}

extension DaemonConfiguration {
  /// The fleet link's connection: `[Fleet] URL` or the `[Upload]` MQTT broker, with the upload's
  /// TLS files and `[MQTT]` credentials and keep-alive, under a client ID of its own (two
  /// connections with one ID would throw each other off the broker). Nil when `[Fleet]` is off or
  /// names no broker.
  public var fleetSettings: MQTTSettings? {
    guard fleet.enabled, let url = fleet.url ?? uploadURL, let endpoint = MQTTSettings.endpoint(url) else {
      return nil
    }
    let clientId =
      String(((mqtt.clientId ?? MQTTOptions.defaultClientId) + "-fleet").utf8.prefix(128)) ?? "fleet"
    return MQTTSettings(
      host: endpoint.host, port: endpoint.port, tls: endpoint.tls, tlsFiles: uploadTLS, clientId: clientId,
      username: mqtt.username, passwordFile: mqtt.passwordFile, keepAlive: mqtt.keepAlive,
      sessionExpiry: mqtt.sessionExpiry, topic: fleet.statusTopic,
      // The reported answer and the beacon report wait this long for their PUBACK; a stop gives
      // the clean offline message less (`FleetLink.stopBudget`).
      timeout: min(uploadTimeout, 5))
  }
}
