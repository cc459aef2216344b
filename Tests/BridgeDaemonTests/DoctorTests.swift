import BeaconCore
import BlueZ
import Testing

@testable import BridgeDaemon

/// `doctor`'s judgement, from gathered facts.
@Suite struct DoctorTests {
  func facts(
    config: Result<DaemonConfiguration, KeyFileError> = .success(DaemonConfiguration()),
    bluez: BlueZProbe.Result? = .running(
      owner: ":1.1",
      adapters: [
        .init(
          name: "hci0", address: "00:AA:01:00:00:23", powered: true, discovering: true,
          passiveMonitoring: false)
      ]
    ),
    daemon: Result<JSONValue, DoctorFacts.DaemonUnavailable> = .success(
      .object([
        "scanning": .string("bluez (active discovery)"), "beaconsInRange": .array([.object([:])]),
        "activeBeacon": .object(["deviceId": .string("UNIT-0042")]),
      ])),
    outbox: OutboxSummary = OutboxSummary(
      trips: 0, undelivered: 0, unresolvedTrips: 0, deadLetters: 0, limit: 100, oldestAge: nil),
    stateProblem: String? = nil, free: UInt64 = 5_000_000_000, tokenFiles: [DoctorFacts.TokenFileCheck] = [],
    uploadURL: String = "https://backend.example/trips"
  ) -> DoctorFacts {
    var c = (try? config.get()) ?? DaemonConfiguration()
    c.uploadURL = uploadURL
    let configuration: Result<DaemonConfiguration, KeyFileError> =
      switch config {
      case .success: .success(c)
      case .failure(let e): .failure(e)
      }
    return DoctorFacts(
      configPath: "/etc/beaconbridge/beaconbridge.conf", configuration: configuration,
      stateDirectory: "/var/lib/x",
      stateDirectoryProblem: stateProblem, store: .success(("ok", outbox)), freeBytes: free, bluez: bluez,
      daemon: daemon.map(StatusSample.document(over:)), tokenFiles: tokenFiles, isRoot: true)
  }

  /// The delivery check from the daemon's `upload` object, read as the CLI reads it.
  func delivery(_ upload: JSONValue, mqtt: Bool) -> HealthCheck? {
    Doctor.delivery(StatusSample.document(over: .object(["upload": upload])).upload, mqtt: mqtt)
  }

  func status(_ report: HealthReport, _ name: String) -> HealthCheck.Status? {
    report.checks.first { $0.name == name }?.status
  }

  /// A state directory this user cannot write, whose store was read: a warning (the daemon could
  /// not keep its store there), not critical, and the store's own check stands.
  @Test func aReadOnlyStateDirectoryIsAWarning() {
    var read = facts()
    read.stateDirectoryNotWritable = (
      "is on a read-only file system", "pass --state-dir with a directory on a writable file system"
    )
    let report = Doctor.evaluate(read)
    let check = report.checks.first { $0.name == "state directory" }
    #expect(check?.status == .warning)
    #expect(
      check?.detail
        == "/var/lib/x is on a read-only file system; its store was read without writing, but the daemon could not keep its store there"
    )
    #expect(status(report, "store") == .ok)
    // A store that did not read is not said to have been read.
    read.store = .failure(StoreError(.io, "the store cannot be read"))
    let unread = Doctor.evaluate(read).checks.first { $0.name == "state directory" }
    #expect(
      unread?.detail == "/var/lib/x is on a read-only file system; the daemon could not keep its store there")
  }

  /// The Upload checks cover the MQTT sink: what it connects to, and a password sent in clear.
  @Test func theMQTTSinkIsReported() throws {
    var config = try DaemonConfiguration.parse("[MQTT]\nUsername = bridge\n", file: "c")
    config.uploadURL = "mqtt://broker.example"
    let report = Doctor.evaluate(facts(config: .success(config), uploadURL: "mqtt://broker.example"))
    let sink = report.checks.filter { $0.name == "MQTT sink" }
    #expect(sink.first?.status == .ok)
    #expect(sink.first?.detail.contains("QoS 1 to broker.example:1883") == true, "\(sink)")
    #expect(sink.contains { $0.status == .warning && $0.detail.contains("in clear") })
    let tls = Doctor.evaluate(facts(config: .success(config), uploadURL: "mqtts://broker.example"))
    #expect(tls.checks.filter { $0.name == "MQTT sink" }.map(\.status) == [.ok])
    let http = Doctor.evaluate(facts())
    #expect(http.checks.filter { $0.name == "MQTT sink" }.isEmpty)
  }

  @Test func healthyBoxIsOK() {
    let report = Doctor.evaluate(facts())
    #expect(report.overall == .ok, "\(report.text)")
    #expect(report.exitStatus == 0)
    #expect(Set(report.checks.map(\.category)) == Set(HealthCheck.Category.allCases))
    #expect(report.checks.contains { $0.name == "scan mode" && $0.detail.contains("active discovery") })
  }

  @Test func missingBluetoothdIsCriticalWithAFix() {
    let report = Doctor.evaluate(facts(bluez: .unavailable(.bluetoothdAbsent)))
    #expect(status(report, "bluetoothd") == .critical)
    #expect(report.exitStatus == 1)
    #expect(report.text.contains("systemctl start bluetooth"))
  }

  @Test func noAdapterInTheKernelIsWhyBluetoothdIsNotRunning() {
    var noAdapter = facts(bluez: .unavailable(.bluetoothdAbsent))
    noAdapter.kernelAdapters = []
    let report = Doctor.evaluate(noAdapter)
    #expect(status(report, "bluetoothd") == .warning)
    #expect(status(report, "adapter") == .critical)
    #expect(report.text.contains("no Bluetooth adapter on this machine"))
    // With a controller in the kernel, bluetoothd itself is the problem.
    var stopped = facts(bluez: .unavailable(.bluetoothdAbsent))
    stopped.kernelAdapters = ["hci0"]
    #expect(status(Doctor.evaluate(stopped), "bluetoothd") == .critical)
  }

  @Test func adapterOffIsCritical() {
    let off = BlueZProbe.Result.running(
      owner: ":1.1",
      adapters: [
        .init(name: "hci0", address: nil, powered: false, discovering: false, passiveMonitoring: false)
      ])
    #expect(status(Doctor.evaluate(facts(bluez: off)), "adapter") == .critical)
    #expect(
      status(Doctor.evaluate(facts(bluez: .running(owner: ":1.1", adapters: []))), "adapter") == .critical)
  }

  @Test func badConfigurationIsCriticalAtItsLine() {
    let report = Doctor.evaluate(
      facts(
        config: .failure(KeyFileError(file: "/etc/b.conf", line: 4, message: "exitTimeout must be a number")))
    )
    #expect(status(report, "configuration") == .critical)
    #expect(report.text.contains("/etc/b.conf:4"))
  }

  @Test(arguments: [(10, HealthCheck.Status.ok), (50, .warning), (95, .critical)])
  func outboxBacklogWarnsWellBeforeItFills(undelivered: Int, expected: HealthCheck.Status) {
    let outbox = OutboxSummary(
      trips: 1, undelivered: undelivered, unresolvedTrips: 0, deadLetters: 0, limit: 100, oldestAge: 3600)
    #expect(status(Doctor.evaluate(facts(outbox: outbox)), "outbox") == expected)
  }

  @Test func unresolvedTripsAndDeadLettersAreShown() {
    let outbox = OutboxSummary(
      trips: 2, undelivered: 3, unresolvedTrips: 1, deadLetters: 2, limit: 100, oldestAge: 10)
    let report = Doctor.evaluate(facts(outbox: outbox))
    #expect(status(report, "unresolved trips") == .warning)
    #expect(status(report, "dead letters") == .warning)
    #expect(report.text.contains("trip assign"))
    #expect(report.exitStatus == 2)
  }

  @Test(arguments: [
    (1, false, HealthCheck.Status.warning, "the backend"), (3, false, .critical, "the backend"),
    (5, true, .critical, "the MQTT broker"),
  ])
  func aFailingSinkIsNamedInItsOwnWords(failures: Int, mqtt: Bool, expected: HealthCheck.Status, sink: String)
    throws
  {
    let upload: JSONValue = .object([
      "state": .string("failing"), "consecutiveFailures": .int(Int64(failures)), "delivered": .int(0),
      "lastError": .string("not sent: the broker refused the connection: Not authorized"),
      "retryInSeconds": .double(4),
    ])
    let check = try #require(delivery(upload, mqtt: mqtt))
    #expect(check.status == expected)
    #expect(check.detail.contains("the last \(failures) post(s) to \(sink) failed"))
    #expect(check.detail.contains("Not authorized"))
    #expect(check.detail.contains("the next try is in 4 s"))
    #expect(check.recommendation?.contains(mqtt ? "PasswordFile" : "[Upload] URL") == true)
  }

  @Test func aDeliveringOrIdleSinkIsOK() throws {
    let delivering = try #require(
      delivery(
        .object([
          "state": .string("delivering"), "delivered": .int(12), "lastDeliveredAgoSeconds": .double(3),
        ]),
        mqtt: false))
    #expect(delivering.status == .ok)
    #expect(delivering.detail == "12 batch(es) delivered to the backend, the last 3 s ago")
    #expect(delivery(.object(["state": .string("idle")]), mqtt: true)?.status == .ok)
    // Through evaluate: the daemon's status carries it.
    let report = Doctor.evaluate(
      facts(
        daemon: .success(
          .object([
            "scanning": .string("bluez"), "beaconsInRange": .array([]),
            "upload": .object(["state": .string("failing"), "consecutiveFailures": .int(3)]),
          ]))))
    #expect(status(report, "delivery") == .critical)
  }

  /// A reply from another version of the daemon is a warning that says so and how to fix it,
  /// never a Swift value.
  @Test func anotherVersionsReplyIsAWarningThatSaysSo() {
    let error = StatusDocumentError(path: "upload", problem: .missing)
    let report = Doctor.evaluate(facts(daemon: .failure(.init(error))))
    let check = report.checks.first { $0.name == "daemon" }
    #expect(check?.status == .warning)
    #expect(check?.detail.contains("the daemon's status has no \"upload\"") == true, "\(report.text)")
    #expect(check?.recommendation == StatusDocumentError.fix)
    #expect(!report.text.contains("(message:") && !report.text.contains("Failure("))
  }

  /// Drops are judged once (`StatusVerdicts.dropped`): a warning in doctor, the `Dropped:` line
  /// in status.
  @Test func droppedAdvertisementsWarn() {
    let report = Doctor.evaluate(facts(daemon: .success(.object(["droppedAdvertisements": .int(7)]))))
    #expect(status(report, "dropped advertisements") == .warning, "\(report.text)")
    #expect(status(Doctor.evaluate(facts()), "dropped advertisements") == nil)
  }

  /// An upload URL libcurl cannot use is a configuration error, so doctor says critical.
  @Test func anUnusableUploadURLIsCritical() {
    let parsed = Result { () throws(KeyFileError) in
      try DaemonConfiguration.parseChecked(
        "[Upload]\nURL = https://backend.example:70000/trips\n", file: "b.conf")
    }
    let report = Doctor.evaluate(facts(config: parsed))
    #expect(status(report, "configuration") == .critical, "\(report.text)")
    #expect(report.text.contains("b.conf:2"), "\(report.text)")
    #expect(report.exitStatus == 1)
  }

  @Test func stoppedDaemonAndNoBeaconsAreWarnings() {
    let stopped = Doctor.evaluate(facts(daemon: .failure(.init("the beaconbridge daemon is not running"))))
    #expect(status(stopped, "daemon") == .warning)
    let quiet = Doctor.evaluate(
      facts(
        daemon: .success(
          .object(["scanning": .string("bluez"), "beaconsInRange": .array([]), "activeBeacon": .null]))))
    #expect(status(quiet, "scanning") == .warning)
    #expect(status(quiet, "active beacon") == .warning)
  }

  @Test func unwritableStateAndLowDiskAreCritical() {
    #expect(status(Doctor.evaluate(facts(stateProblem: "not writable")), "state directory") == .critical)
    #expect(status(Doctor.evaluate(facts(free: 5_000_000)), "free disk") == .critical)
    #expect(status(Doctor.evaluate(facts(free: 50_000_000)), "free disk") == .warning)
  }

  @Test func jsonCarriesEveryCheck() {
    let report = Doctor.evaluate(facts())
    #expect(report.json["overall"]?.stringValue == "ok")
    #expect(report.json["checks"]?.arrayValue?.count == report.checks.count)
  }

  /// URL credentials and secret parameters never reach the report, in text or JSON, and neither
  /// does a secret the gatherer learned (a token file's contents) wherever it appears.
  @Test func reportIsRedacted() {
    var f = facts(
      daemon: .failure(.init("the daemon said: t0k-from-file is wrong")),
      uploadURL: "https://fleet:pa55word-x@backend.example/trips?token=q-secret-1&sig=s1g-secret&page=1")
    f.redactor = Redactor(secrets: ["t0k-from-file"])
    let report = Doctor.evaluate(f)
    for output in [report.text, report.json.compactText] {
      for secret in ["pa55word-x", "q-secret-1", "s1g-secret", "t0k-from-file", "fleet:"] {
        #expect(!output.contains(secret), "\(secret) in \(output)")
      }
      #expect(
        output.contains("https://<redacted>@backend.example/trips?token=<redacted>&sig=<redacted>&page=1"))
    }
  }

  // MARK: Beacon health

  func withPaired(_ beacon: [String: JSONValue]) -> Result<JSONValue, DoctorFacts.DaemonUnavailable> {
    var fields: [String: JSONValue] = [
      "deviceId": .string("UNIT-0042"), "label": .string("van 7"), "inRange": .bool(true),
      "lastSeenAgoSeconds": .double(1), "batteryMv": .int(3000), "reboots": .int(0),
    ]
    for (key, value) in beacon { fields[key] = value }
    return .success(
      .object([
        "scanning": .string("bluez (active discovery)"), "beaconsInRange": .array([.object([:])]),
        "activeBeacon": .object(["deviceId": .string("UNIT-0042")]),
        "pairedBeacons": .array([.object(fields)]),
      ]))
  }

  @Test func healthyPairedBeaconIsOK() {
    let report = Doctor.evaluate(facts(daemon: withPaired([:])))
    #expect(status(report, "beacon health") == .ok, "\(report.text)")
    #expect(report.overall == .ok)
  }

  /// The battery verdict is the daemon's (`BeaconHealth`, with its hysteresis), never judged
  /// again from the millivolts: a cell the daemon still holds low at 2530 mV (inside the
  /// hysteresis) warns, and 2490 mV the daemon does not call low does not. The wording names the
  /// configured threshold.
  @Test func lowBatteryIsTheDaemonsVerdict() throws {
    let report = Doctor.evaluate(
      facts(daemon: withPaired(["batteryMv": .int(2530), "batteryLow": .bool(true)])))
    #expect(status(report, "beacon battery") == .warning, "\(report.text)")
    #expect(report.text.contains("UNIT-0042 (van 7): battery 2530 mV, below 2500 mV"), "\(report.text)")
    #expect(report.exitStatus == 2)
    let notLow = Doctor.evaluate(
      facts(daemon: withPaired(["batteryMv": .int(2490), "batteryLow": .bool(false)])))
    #expect(status(notLow, "beacon battery") == nil, "\(notLow.text)")
    let lower = try DaemonConfiguration.parse("[Health]\nlowBatteryMillivolts = 2400\n", file: "test.conf")
    let worded = Doctor.evaluate(
      facts(
        config: .success(lower), daemon: withPaired(["batteryMv": .int(2390), "batteryLow": .bool(true)])))
    #expect(worded.text.contains("battery 2390 mV, below 2400 mV"), "\(worded.text)")
  }

  /// The same hysteresis, end to end: `BeaconHealthBook` decides, the daemon's status JSON
  /// carries it, and doctor warns exactly while the book says low.
  @Test func theBatteryHysteresisReachesDoctor() throws {
    var health = BeaconHealth()
    health.batteryLow = true
    let fields = Dictionary(
      uniqueKeysWithValues: ReportedHealth(health, now: Timestamp(seconds: 0)).fields(withAge: true).map {
        ($0.key, $0.value)
      })
    let report = Doctor.evaluate(facts(daemon: withPaired(fields.merging(["batteryMv": .int(2520)]) { $1 })))
    #expect(status(report, "beacon battery") == .warning, "\(report.text)")
  }

  /// The clone verdict is the daemon's (`BeaconHealth.possibleClone`, through the status JSON):
  /// doctor names the device and the addresses, and says to pair it by key.
  @Test func aPossibleCloneWarnsAndSaysToPairByKey() throws {
    var health = BeaconHealth()
    health.possibleClone = true
    health.cloneAddresses = [BluetoothAddress("C0:FF:EE:00:00:07")!, BluetoothAddress("DE:AD:BE:EF:00:07")!]
    let fields = Dictionary(
      uniqueKeysWithValues: ReportedHealth(health, now: Timestamp(seconds: 0)).fields(withAge: true).map {
        ($0.key, $0.value)
      })
    let report = Doctor.evaluate(facts(daemon: withPaired(fields)))
    #expect(status(report, "beacon clone") == .warning, "\(report.text)")
    #expect(
      report.text.contains(
        "UNIT-0042 (van 7): its identity, sent in clear, is heard from C0:FF:EE:00:00:07 and DE:AD:BE:EF:00:07 at once"
      ),
      "\(report.text)")
    #expect(report.text.contains("pair UNIT-0042 by key instead (beaconbridge pair --eid-key-file FILE"))
    #expect(report.text.contains("--irk-file FILE"))
    #expect(status(report, "beacon health") == nil)
    let clean = Doctor.evaluate(facts(daemon: withPaired(["possibleClone": .bool(false)])))
    #expect(status(clean, "beacon clone") == nil && status(clean, "beacon health") == .ok)
  }

  @Test func silentAndRebootedBeaconsWarn() throws {
    let config = try DaemonConfiguration.parse("[Health]\nsilentAfter = 60\n", file: "test.conf")
    let report = Doctor.evaluate(
      facts(
        config: .success(config),
        daemon: withPaired([
          "inRange": .bool(false), "lastSeenAgoSeconds": .double(75), "silent": .bool(true),
          "reboots": .int(2),
          "lastRebootAgoSeconds": .double(300),
        ])))
    #expect(status(report, "beacon silent") == .warning, "\(report.text)")
    #expect(report.text.contains("not seen for 75 s (silentAfter 60 s)"))
    #expect(status(report, "beacon reboot") == .warning)
    #expect(report.text.contains("restarted 2 time(s) (its uptime went backwards), last 300 s ago"))
  }
}
