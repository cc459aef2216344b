import BeaconCore
import BridgeDaemon
import Testing

@Suite struct ConfigurationFileTests {
  @Test func emptyFileMeansTheDefaults() throws {
    let config = try DaemonConfiguration.parse("", file: "empty.conf")
    #expect(config == DaemonConfiguration())
    let commented = try DaemonConfiguration.parse("# nothing\n; here\n\n[Presence]\n", file: "c.conf")
    #expect(commented == DaemonConfiguration())
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
    #expect(config.adapter == "hci1")
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
    ("[Presence]\nexitTimeout = soon", "bad.conf:2: exitTimeout must be a number"),
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
    ("[General]\nadapter = wlan0", "bad.conf:2: adapter must look like hci0"),
    ("[Upload]\nURL = ftp://x", "bad.conf:2: URL must start with http:// or https://"),
    ("[Upload]\nTokenFile = token.txt", "bad.conf:2: TokenFile must be an absolute path"),
    ("[Outbox]\nMaxBatches = 0", "bad.conf:2: MaxBatches must be a whole number"),
    ("[Trips]\nunresolvedPolicy = fallback", "bad.conf: unresolvedPolicy=fallback needs a fallbackDeviceId"),
  ])
  func badFilesAreRefusedAtTheirLine(text: String, message: String) {
    #expect {
      _ = try DaemonConfiguration.parse(text, file: "bad.conf")
    } throws: { error in
      let description = (error as? KeyFileError)?.description ?? ""
      return description.hasPrefix(message)
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
