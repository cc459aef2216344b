import BeaconCore
import BridgeDaemon
import Foundation
import Testing

/// beaconbridge.conf(5) (man/beaconbridge.conf.5.md, made into the man page by
/// scripts/md2man.py): a row for every key the parser takes, in its section, with the parser's
/// default; no row for a key the parser does not take.
@Suite struct ConfigurationManPageTests {
  static let path = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("man/beaconbridge.conf.5.md").path

  /// (section, key) → the default cell, from the page's tables.
  func rows() throws -> [String: String] { try cells(column: 1) }

  /// (section, key) → the cell of one column (1: default, 2: range).
  func cells(column: Int) throws -> [String: String] {
    var section = ""
    var out: [String: String] = [:]
    for line in try String(contentsOfFile: Self.path, encoding: .utf8).split(separator: "\n") {
      if line.hasPrefix("## [") {
        section = String(line.dropFirst(4).dropLast())
      } else if line.hasPrefix("| `") {
        let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        out[section + "." + cells[0].replacingOccurrences(of: "`", with: "")] = cells[column]
      }
    }
    return out
  }

  static var expected: [String: String] {
    let defaults = DaemonConfiguration()
    var out: [String: String] = [:]
    for key in BridgeConfiguration.keys {
      let value = defaults.bridge.value(of: key.name) ?? ""
      out[BridgeConfiguration.section(of: key.name) + "." + key.name] = value.isEmpty ? "unset" : "`\(value)`"
    }
    out["General.backend"] = "`\(defaults.backend.rawValue)`"
    out["General.adapter"] = "unset"
    out["Upload.URL"] = "unset"
    out["Upload.TokenFile"] = "unset"
    out["Upload.Timeout"] = "`\(Int(defaults.uploadTimeout))`"
    for key in ["CAFile", "CertFile", "KeyFile"] { out["Upload." + key] = "unset" }
    out["Outbox.MaxBatches"] = "`\(defaults.outboxMaxBatches)`"
    for key in MQTTOptions.keys { out["MQTT." + key] = "unset" }
    out["MQTT.Topic"] = "`\(defaults.mqtt.topic)`"
    out["MQTT.KeepAlive"] = "`\(defaults.mqtt.keepAlive)`"
    out["MQTT.SessionExpiry"] = "`\(defaults.mqtt.sessionExpiry)`"
    for key in GZoneConfiguration.keys { out["GZone." + key] = "unset" }
    out["GZone.TokenFile"] = "`[Upload]`'s"
    out["GZone.Interval"] = "`\(Int(defaults.gzone.interval))`"
    out["GZone.AfterUploadDelay"] = "`\(Int(defaults.gzone.afterUploadDelay))`"
    out["Fleet.BoxId"] = "the machine-id's first 12 hex digits"
    out["Fleet.StatusTopic"] = "`\(defaults.fleet.statusTopic)`"
    out["Fleet.DesiredTopic"] = "`\(defaults.fleet.desiredTopic)`"
    out["Fleet.ReportedTopic"] = "`\(defaults.fleet.reportedTopic)`"
    out["Fleet.BeaconsTopic"] = "`\(defaults.fleet.beaconsTopic)`"
    out["Fleet.URL"] = "`[Upload]`'s"
    out["Fleet.ReportInterval"] = "`\(Int(defaults.fleet.reportInterval))`"
    return out
  }

  @Test func everyKeyWithItsDefault() throws {
    let rows = try rows()
    for (key, value) in Self.expected.sorted(by: { $0.key < $1.key }) {
      #expect(
        rows[key] == value,
        "beaconbridge.conf(5): \(key) is \(rows[key] ?? "missing"), the parser's default is \(value)")
    }
    for key in rows.keys where Self.expected[key] == nil {
      Issue.record("beaconbridge.conf(5) documents \(key), which the parser does not take")
    }
  }

  /// Every number key's range is the one the parser enforces.
  @Test func everyNumberStatesItsRange() throws {
    let ranges = try cells(column: 2)
    var rules: [(String, SettingNumber)] = BridgeConfiguration.keys.compactMap { key in
      key.number.map { (BridgeConfiguration.section(of: key.name) + "." + key.name, $0) }
    }
    rules += [
      ("Upload.Timeout", DaemonConfiguration.timeoutRule),
      ("Outbox.MaxBatches", DaemonConfiguration.maxBatchesRule),
      ("MQTT.KeepAlive", MQTTOptions.keepAliveRule), ("MQTT.SessionExpiry", MQTTOptions.sessionExpiryRule),
    ]
    for (key, rule) in rules {
      let cell = ranges[key] ?? "missing"
      #expect(
        cell == rule.rangeText || cell.hasPrefix(rule.rangeText + ",") || cell.hasSuffix(" " + rule.rangeText)
          || cell.contains(" \(rule.rangeText),"),
        "beaconbridge.conf(5): \(key) says \(cell), the parser takes \(rule.rangeText)")
    }
  }

  /// Every key the page documents parses in its section (with a value it allows).
  @Test func everyDocumentedKeyParses() throws {
    for (key, documented) in try rows().sorted(by: { $0.key < $1.key }) {
      let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
      var value: String
      switch parts[1] {
      case _ where parts[0] == "Fleet" && parts[1] == "URL": value = "mqtts://fleet.example"
      case "BoxId": value = "van-7"
      case "backend": value = "bluez"
      case "adapter": value = "hci0"
      case "unresolvedPolicy": value = "hold"
      case "rssiFilter": value = "kalman"
      case let name where name.hasSuffix("URL"): value = "https://example.org/x"
      case "TokenFile": value = "/etc/beaconbridge/token"
      case "CAFile", "CertFile", "KeyFile", "PasswordFile": value = "/etc/beaconbridge/tls.pem"
      case "ClientId", "Username": value = "bridge-7"
      case "sending": value = "postTrip"
      case "dwellSightings", "MaxBatches", "Interval", "Timeout": value = "30"
      case "fallbackDeviceId", "deviceId", "UnitId", "PolicyNumber", "UserId": value = "X"
      default: value = "0.2"
      }
      // The documented default, where it is a literal.
      if documented.hasPrefix("`"), documented.hasSuffix("`"), !documented.contains("[") {
        value = String(documented.dropFirst().dropLast())
      }
      var text = "[\(parts[0])]\n\(parts[1]) = \(value)\n"
      // A client key needs its certificate.
      if parts[1] == "KeyFile" { text += "CertFile = /etc/beaconbridge/client.pem\n" }
      // The fleet link needs a broker.
      if parts[0] == "Fleet" { text += "[Upload]\nURL = mqtt://127.0.0.1\n" }
      if parts[0] == "GZone", parts[1].hasSuffix("URL") {
        text =
          "[GZone]\n"
          + GZoneConfiguration.keys.filter { $0.hasSuffix("URL") }.map { "\($0) = \(value)" }
          .joined(separator: "\n") + "\n"
      }
      #expect(throws: Never.self, "\(key) = \(value)") { _ = try DaemonConfiguration.parse(text, file: "t") }
    }
  }
}
