import BeaconCore

/// Which radio the daemon scans with.
public enum ScanBackend: String, Hashable, Sendable, CaseIterable {
  case bluez
  case hci
}

/// The daemon's configuration: the core's settings, plus the daemon's own sections.
///
/// The file is `/etc/beaconbridge/beaconbridge.conf`, an INI keyfile. Sections: `[General]`
/// (backend, adapter), `[Presence]`, `[ActiveBeacon]`, `[Trips]` (the core settings, by the same
/// camelCase names as a scenario's `config`), `[Upload]` (`URL`, `TokenFile`, retry delays),
/// `[Outbox]` (`MaxBatches`) and `[GZone]` (the G-Zone poller, `GZoneConfiguration`). An empty
/// file means the defaults; an unknown section or key or a bad value is an error at its
/// `file:line`, and the daemon refuses to start rather than guess.
public struct DaemonConfiguration: Hashable, Sendable {
  public static let defaultPath = "/etc/beaconbridge/beaconbridge.conf"
  /// A larger file is refused unread (1 MiB; the shipped one is under 4 KiB).
  public static let maximumFileSize = 1 << 20

  public var bridge = BridgeConfiguration()
  public var backend: ScanBackend = .bluez
  /// The adapter, or nil for the first powered adapter.
  public var adapter: HCIDeviceID?
  public var uploadURL: String?
  public var tokenFile: String?
  /// Seconds one upload request may take before it counts as failed (and is retried).
  public var uploadTimeout: Double = 30
  /// `[Upload] CAFile`, `CertFile`, `KeyFile`: the CA to trust and the client certificate and
  /// key for mutual TLS (absolute paths; a key needs its certificate; a certificate without
  /// `KeyFile` carries its key in the same PEM file).
  public var uploadTLS = TLSFiles()
  /// `[MQTT]`: the MQTT sink's settings, used when `[Upload] URL` is `mqtt://` or `mqtts://`.
  public var mqtt = MQTTOptions()
  /// The outbox refuses new batches beyond this many.
  public var outboxMaxBatches: Int = 100_000
  /// `[GZone]`: the G-Zone poller (docs/gzone.md); disabled unless its URLs are set.
  public var gzone = GZoneConfiguration()
  /// `[Fleet]`: the box run from the broker (docs/fleet.md); off unless a key is set.
  public var fleet = FleetOptions()

  public init() {}

  /// `[Upload] Timeout`: seconds.
  public static let timeoutRule = SettingNumber(1...600, unit: "seconds")
  /// `[Outbox] MaxBatches`.
  public static let maxBatchesRule = SettingNumber(1...10_000_000, unit: "batches", whole: true)

  /// The daemon's own keys, by section.
  static let ownKeys: [String: [String]] = [
    "General": ["backend", "adapter"],
    "Upload": ["URL", "TokenFile", "Timeout", "CAFile", "CertFile", "KeyFile"],
    "Outbox": ["MaxBatches"],
    "MQTT": MQTTOptions.keys,
    "GZone": GZoneConfiguration.keys,
    "Fleet": FleetOptions.keys,
  ]

  /// Whether `key` is a setting of `section` (what `parse` takes); the support bundle shows the
  /// values of these keys only (`Redactor.redactConfiguration`).
  public static func isKnownKey(section: String, key: String) -> Bool {
    if ownKeys[section]?.contains(key) == true { return true }
    return BridgeConfiguration.key(named: key) != nil && BridgeConfiguration.section(of: key) == section
  }

  /// The MQTT sink's settings when `[Upload] URL` is an `mqtt://` or `mqtts://` URL.
  public var mqttSettings: MQTTSettings? {
    guard let url = uploadURL, let endpoint = MQTTSettings.endpoint(url) else { return nil }
    return MQTTSettings(
      host: endpoint.host, port: endpoint.port, tls: endpoint.tls, tlsFiles: uploadTLS,
      clientId: mqtt.clientId ?? MQTTOptions.defaultClientId, username: mqtt.username,
      passwordFile: mqtt.passwordFile, keepAlive: mqtt.keepAlive, sessionExpiry: mqtt.sessionExpiry,
      topic: mqtt.topic, timeout: uploadTimeout)
  }

  public static func parse(_ text: String, file: String) throws(KeyFileError) -> DaemonConfiguration {
    let keyFile = try KeyFile.parse(text, file: file)
    var config = DaemonConfiguration()
    let sections = Set(BridgeConfiguration.keys.map { BridgeConfiguration.section(of: $0.name) }).union(
      ownKeys.keys)
    for entry in keyFile.entries {
      func fail(_ message: String) -> KeyFileError {
        KeyFileError(file: file, line: entry.line, message: message)
      }
      guard sections.contains(entry.section) else {
        throw fail("unknown section [\(entry.section)] (known: \(sections.sorted().joined(separator: ", ")))")
      }
      switch (entry.section, entry.key) {
      case ("General", "backend"):
        guard let backend = ScanBackend(rawValue: entry.value) else {
          throw fail("backend must be bluez or hci, not \(entry.value.quotedForMessage)")
        }
        config.backend = backend
      case ("General", "adapter"):
        guard !entry.value.isEmpty else {
          config.adapter = nil
          continue
        }
        do { config.adapter = try HCIDeviceID(entry.value) } catch { throw fail(error.description) }
      case ("Upload", "URL"):
        guard
          entry.value.hasPrefix("http://") || entry.value.hasPrefix("https://")
            || MQTTSettings.endpoint(entry.value) != nil
        else {
          throw fail(
            "URL must start with http:// or https://, or be mqtt://host[:port] or mqtts://host[:port]")
        }
        config.uploadURL = entry.value
      case ("Upload", "Timeout"):
        do { config.uploadTimeout = try Self.timeoutRule.parse("Timeout", entry.value) } catch {
          throw fail(error.description)
        }
      case ("Upload", "TokenFile"):
        guard entry.value.hasPrefix("/") else { throw fail("TokenFile must be an absolute path") }
        config.tokenFile = entry.value
      case ("Upload", "CAFile"), ("Upload", "CertFile"), ("Upload", "KeyFile"):
        guard entry.value.hasPrefix("/") else { throw fail("\(entry.key) must be an absolute path") }
        switch entry.key {
        case "CAFile": config.uploadTLS.caFile = entry.value
        case "CertFile": config.uploadTLS.certFile = entry.value
        default: config.uploadTLS.keyFile = entry.value
        }
      case ("Outbox", "MaxBatches"):
        do { config.outboxMaxBatches = Int(try Self.maxBatchesRule.parse("MaxBatches", entry.value)) } catch {
          throw fail(error.description)
        }
      case ("MQTT", _):
        do { try config.mqtt.set(entry.key, to: entry.value) } catch { throw fail(error.description) }
        config.mqtt.lines[entry.key] = entry.line
      case ("GZone", _):
        do { try config.gzone.set(entry.key, to: entry.value) } catch { throw fail(error.message) }
      case ("Fleet", _):
        do { try config.fleet.set(entry.key, to: entry.value, line: entry.line) } catch {
          throw fail(error.description)
        }
      default:
        guard BridgeConfiguration.key(named: entry.key) != nil,
          BridgeConfiguration.section(of: entry.key) == entry.section
        else {
          let known =
            BridgeConfiguration.keys.map(\.name).filter {
              BridgeConfiguration.section(of: $0) == entry.section
            }
            + (ownKeys[entry.section] ?? [])
          throw fail(
            "unknown key \(entry.key) in [\(entry.section)] (known: \(known.joined(separator: ", ")))")
        }
        do { try config.bridge.set(entry.key, to: entry.value) } catch { throw fail(error.description) }
      }
    }
    var problems = config.bridge.problems() + config.gzone.problems()
    if config.uploadTLS.keyFile != nil, config.uploadTLS.certFile == nil {
      problems.append("[Upload] KeyFile needs CertFile (the client certificate it belongs to)")
    }
    if let first = problems.first { throw KeyFileError(file: file, line: 0, message: first) }
    if config.fleet.enabled, config.fleetSettings == nil {
      throw KeyFileError(
        file: file, line: config.fleet.line,
        message: "[Fleet] needs a broker: set [Fleet] URL, or an mqtt:// or mqtts:// [Upload] URL")
    }
    if let overlap = FleetTopicCheck(config).overlap {
      throw KeyFileError(file: file, line: overlap.line, message: overlap.message)
    }
    return config
  }
}
