import BeaconCore
import BridgeDaemon
import Foundation
import Testing

/// `etc/beaconbridge.conf`, the commented default configuration that `make install` and the .deb
/// put at /etc/beaconbridge/beaconbridge.conf.
@Suite struct ShippedConfigurationTests {
  static let path = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("etc/beaconbridge.conf").path

  /// The daemon's own keys, by section (besides the core's `BridgeConfiguration.keys`).
  static let ownKeys: [(section: String, key: String)] =
    [
      ("General", "backend"), ("General", "adapter"), ("Upload", "URL"), ("Upload", "TokenFile"),
      ("Upload", "Timeout"), ("Upload", "CAFile"), ("Upload", "CertFile"), ("Upload", "KeyFile"),
      ("Outbox", "MaxBatches"),
    ] + MQTTOptions.keys.map { ("MQTT", $0) } + FleetOptions.keys.map { ("Fleet", $0) }

  func shipped() throws -> String { try String(contentsOfFile: Self.path, encoding: .utf8) }

  /// `#key = value` lines, with the section each sits in.
  func commentedSettings(_ text: String) -> [(section: String, key: String, value: String)] {
    var section = ""
    var out: [(String, String, String)] = []
    for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line.hasPrefix("[") && line.hasSuffix("]") {
        section = String(line.dropFirst().dropLast())
      } else if line.hasPrefix("#"), let eq = line.firstIndex(of: "=") {
        let key = line[line.index(after: line.startIndex)..<eq].trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber }) else { continue }
        out.append((section, key, line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)))
      }
    }
    return out
  }

  @Test func theShippedFileMeansTheDefaults() throws {
    #expect(try DaemonConfiguration.parse(shipped(), file: Self.path) == DaemonConfiguration())
  }

  @Test func everySettingIsListedInItsSection() throws {
    let listed = commentedSettings(try shipped())
    let expected =
      BridgeConfiguration.keys.map { (BridgeConfiguration.section(of: $0.name), $0.name) } + Self.ownKeys
    for (section, key) in expected {
      // A key name may live in two sections ([Upload] URL, [Fleet] URL): each once, in its own.
      let matches = listed.filter { $0.key == key && $0.section == section }
      #expect(
        matches.count == 1, "\(key) is listed \(matches.count) times in [\(section)] of etc/beaconbridge.conf"
      )
    }
    #expect(listed.count == expected.count, "etc/beaconbridge.conf lists settings that do not exist")
  }

  /// Every number setting states the range the daemon enforces, on the line above it.
  @Test func everyNumberStatesItsRange() throws {
    let lines = try shipped().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let rules =
      BridgeConfiguration.keys.compactMap { key in key.number.map { (key.name, $0) } }
      + [
        ("Timeout", DaemonConfiguration.timeoutRule), ("MaxBatches", DaemonConfiguration.maxBatchesRule),
        ("ReportInterval", FleetOptions.reportIntervalRule),
      ]
    for (name, rule) in rules {
      let index = try #require(lines.firstIndex { $0.hasPrefix("#\(name) =") }, "\(name)")
      #expect(lines[index - 1] == "# Range: \(rule.rangeText).", "\(name)")
    }
  }

  /// The values in the comments are the real defaults: uncommented, they change nothing.
  @Test func theListedValuesAreTheDefaults() throws {
    let text = try shipped()
    var uncommented = ""
    for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let line = String(raw)
      if let setting = commentedSettings(line).first, !setting.value.isEmpty {
        uncommented += "\(setting.key) = \(setting.value)\n"
      } else {
        uncommented += line + "\n"
      }
    }
    #expect(uncommented != text + "\n")
    let config = try DaemonConfiguration.parse(uncommented, file: "uncommented.conf")
    #expect(config == DaemonConfiguration())
    for key in BridgeConfiguration.keys {
      #expect(config.bridge.value(of: key.name) == BridgeConfiguration().value(of: key.name), "\(key.name)")
    }
  }
}
