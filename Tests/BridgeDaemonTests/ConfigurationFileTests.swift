import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

@Suite(.offThePool) struct ConfigurationFileTests {
  @Test func emptyFileMeansTheDefaults() throws {
    let config = try DaemonConfiguration.parse("", file: "empty.conf")
    #expect(config == DaemonConfiguration())
    let commented = try DaemonConfiguration.parse("# nothing\n; here\n\n[Presence]\n", file: "c.conf")
    #expect(commented == DaemonConfiguration())
  }

  /// `DaemonConfiguration.load`, the one reader `run`, `doctor` and `diagnose` share: a named
  /// file must exist and be UTF-8 text, and its errors name it.
  @Test func loadReadsTheNamedFileAndNamesItInErrors() throws {
    let dir = try scratchDirectory("config")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let good = dir + "/good.conf"
    try Data("[General]\nbackend = hci\n".utf8).write(to: URL(fileURLWithPath: good))
    #expect(try DaemonConfiguration.load(path: good).backend == .hci)
    #expect(try DaemonConfiguration.text(path: good) == "[General]\nbackend = hci\n")
    let missing = dir + "/missing.conf"
    #expect(throws: KeyFileError(file: missing, line: 0, message: "no such file")) {
      try DaemonConfiguration.load(path: missing)
    }
    let binary = dir + "/binary.conf"
    try Data([0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: binary))
    let notText = "this line is not UTF-8 text; save the file as UTF-8"
    #expect(throws: KeyFileError(file: binary, line: 1, message: notText)) {
      try DaemonConfiguration.load(path: binary)
    }
    // The first line that is not UTF-8 is named, past good ones, in a file that ends without a
    // newline too.
    try Data("[General]\n\nbackend = hci\n".utf8 + [0x23, 0xC3, 0x28]).write(to: URL(fileURLWithPath: binary))
    #expect(throws: KeyFileError(file: binary, line: 4, message: notText)) {
      try DaemonConfiguration.load(path: binary)
    }
    #expect(throws: KeyFileError(file: dir, line: 0, message: "cannot read it: it is a directory")) {
      try DaemonConfiguration.load(path: dir)
    }
    let bad = dir + "/bad.conf"
    try Data("[General]\nbackend = radio\n".utf8).write(to: URL(fileURLWithPath: bad))
    let error = #expect(throws: KeyFileError.self) { try DaemonConfiguration.load(path: bad) }
    #expect(error?.file == bad && error?.line == 2)
    // Text that does not parse is still handed over whole (the support bundle redacts it).
    #expect(try DaemonConfiguration.text(path: bad) == "[General]\nbackend = radio\n")
  }

  @Test func settingsLandInTheirSections() throws {
    let text = """
      # beaconbridge.conf
      [General]
      backend = hci
      adapter = hci1

      [Presence]
      exitTimeout = 40
      rssiFilter = arma

      [ActiveBeacon]
      activeHold = 45

      [Trips]
      unresolvedPolicy = fallback
      fallbackDeviceId = DEPOT-1

      [Upload]
      URL = https://backend.example/trips
      TokenFile = /etc/beaconbridge/token
      postRetryMax = 120

      [Outbox]
      MaxBatches = 5000
      """
    let config = try DaemonConfiguration.parse(text, file: "full.conf")
    #expect(config.backend == .hci)
    #expect(config.adapter?.name == "hci1")
    #expect(config.adapter?.index == 1)
    #expect(config.bridge.presence.exitTimeout == 40)
    #expect(config.bridge.presence.rssi.filter == .arma)
    #expect(config.bridge.selector.activeHold == 45)
    #expect(config.bridge.trips.unresolvedPolicy == .fallback)
    #expect(config.bridge.trips.fallbackDeviceId == "DEPOT-1")
    #expect(config.uploadURL == "https://backend.example/trips")
    #expect(config.tokenFile == "/etc/beaconbridge/token")
    #expect(config.bridge.postRetryMax == 120)
    #expect(config.outboxMaxBatches == 5000)
  }

  @Test(arguments: [
    ("exitTimeout = 3", "bad.conf:1: a setting before any [Section]"),
    ("[Presence]\nexitTimeout = soon", "bad.conf:2: exitTimeout \"soon\" is not a plain decimal number"),
    ("[Presence]\n\nwarp = 9", "bad.conf:3: unknown key warp in [Presence]"),
    ("[Warp]\nx = 1", "bad.conf:2: unknown section [Warp]"),
    ("[Presence\nexitTimeout = 3", "bad.conf:1: a section header must look like [Name]"),
    ("[Presence]\nexitTimeout 3", "bad.conf:2: expected Key = Value"),
    (
      "[Presence]\nexitTimeout = 3\nexitTimeout = 4",
      "bad.conf:3: exitTimeout is set twice in [Presence] (first at line 2)"
    ),
    ("[ActiveBeacon]\nexitTimeout = 3", "bad.conf:2: unknown key exitTimeout in [ActiveBeacon]"),
    ("[General]\nbackend = carrier-pigeon", "bad.conf:2: backend must be bluez or hci"),
    (
      "[General]\nadapter = wlan0",
      "bad.conf:2: adapter \"wlan0\" is not valid; an adapter is hci followed by"
    ),
    ("[Upload]\nURL = ftp://x", "bad.conf:2: URL must start with http:// or https://"),
    ("[Upload]\nTokenFile = token.txt", "bad.conf:2: TokenFile must be an absolute path"),
    (
      "[Outbox]\nMaxBatches = 0",
      "bad.conf:2: MaxBatches \"0\" is out of range; set a whole number of batches from 1"
    ),
    ("[Trips]\nunresolvedPolicy = fallback", "bad.conf: unresolvedPolicy=fallback needs a fallbackDeviceId"),
    // Numbers: plain decimal within each key's range, named with the range as the fix.
    (
      "[Presence]\nexitTimeout = 0x10",
      "bad.conf:2: exitTimeout \"0x10\" is not a plain decimal number; set a number of seconds from 0.1 to 86400"
    ),
    (
      "[Presence]\nexitTimeout = 1e308",
      "bad.conf:2: exitTimeout \"1e308\" is out of range; set a number of seconds from 0.1 to 86400"
    ),
    ("[Presence]\nexitTimeout = nan", "bad.conf:2: exitTimeout \"nan\" is not a plain decimal number"),
    ("[Presence]\nkalmanSigma = inf", "bad.conf:2: kalmanSigma \"inf\" is not a plain decimal number"),
    (
      "[ActiveBeacon]\nswitchMargin = -6",
      "bad.conf:2: switchMargin \"-6\" is out of range; set a number of dB from 0 to 100"
    ),
    ("[Presence]\nexitTimeout = 1\u{0}0", "bad.conf:2: the line has a control character (U+0000)"),
    (
      "[Upload]\nTimeout = 1e308",
      "bad.conf:2: Timeout \"1e308\" is out of range; set a number of seconds from 1 to 600"
    ),
    ("[Upload]\npostRetryMax = 1e308", "bad.conf:2: postRetryMax \"1e308\" is out of range"),
    ("[Outbox]\nMaxBatches = 0x10", "bad.conf:2: MaxBatches \"0x10\" is not a plain whole number"),
    ("[Outbox]\nMaxBatches = 1e9", "bad.conf:2: MaxBatches \"1e9\" is out of range"),
    (
      "[GZone]\nInterval = 1e308",
      "bad.conf:2: Interval \"1e308\" is out of range; set a number of seconds from 10"
    ),
    // Identifiers: the same sentence as the CLI and D-Bus give.
    (
      "[Trips]\ndeviceId = x\u{202E}y",
      "bad.conf:2: deviceId: device ID \"x\\u{202E}y\" contains the control or invisible character U+202E"
    ),
    (
      "[Trips]\nfallbackDeviceId = \(String(repeating: "z", count: 129))",
      "bad.conf:2: fallbackDeviceId: device ID \"zzz"
    ),
    ("[Trips]\ndeviceId = a\u{1B}[31mb", "bad.conf:2: the line has a control character (U+001B)"),
    ("[General]\nadapter = hci01", "bad.conf:2: adapter \"hci01\" is not valid"),
    ("[General]\nadapter = hci10000", "bad.conf:2: adapter \"hci10000\" is not valid"),
  ])
  func badFilesAreRefusedAtTheirLine(text: String, message: String) {
    #expect {
      _ = try DaemonConfiguration.parse(text, file: "bad.conf")
    } throws: { error in
      let description = (error as? KeyFileError)?.description ?? ""
      return description.hasPrefix(message)
    }
  }

  /// A bad 50 MB value costs the journal one short line: the value is quoted cut short.
  @Test func aHugeValueIsNotEchoed() {
    let text = "[Upload]\nURL = https://" + String(repeating: "a", count: 50_000_000) + "\n"
    #expect {
      _ = try DaemonConfiguration.parse(text, file: "big.conf")
    } throws: { error in
      let description = (error as? KeyFileError)?.description ?? ""
      return description.hasPrefix(
        "big.conf:2: the line is 50000014 bytes long, over 4096: \"URL = https://aaa")
        && description.hasSuffix("…\"") && description.count < 200
    }
  }

  @Test func everyCoreSettingHasASectionTheFileAccepts() throws {
    for key in BridgeConfiguration.keys {
      let section = BridgeConfiguration.section(of: key.name)
      let value = try #require(BridgeConfiguration().value(of: key.name))
      guard !value.isEmpty else { continue }
      _ = try DaemonConfiguration.parse("[\(section)]\n\(key.name) = \(value)\n", file: "k.conf")
    }
  }

  @Test func stateDirectoryPrecedence() {
    #expect(StateDirectory.resolve(option: "/opt", environment: ["BEACONBRIDGE_STATE_DIR": "/x"]) == "/opt")
    #expect(
      StateDirectory.resolve(
        option: nil, environment: ["BEACONBRIDGE_STATE_DIR": "/x", "STATE_DIRECTORY": "/y"]) == "/x")
    #expect(StateDirectory.resolve(option: nil, environment: ["STATE_DIRECTORY": "/y:/z"]) == "/y")
    #expect(StateDirectory.resolve(option: nil, environment: [:]) == "/var/lib/beaconbridge")
  }
}
