import BeaconCore
import BlueZ

public enum Doctor {
  /// Paired beacons' health from the daemon's `Status`: each of `StatusVerdicts.problems` (the
  /// daemon's own verdicts: a low battery with its hysteresis, a silent beacon, a possible clone;
  /// and a reboot) as a warning, worded with the configured `[Health]` thresholds. Nothing is
  /// judged here.
  static func beaconHealth(_ status: StatusDocument, settings: HealthSettings) -> [HealthCheck] {
    let paired = status.pairedBeacons
    guard !paired.isEmpty else { return [] }
    var checks: [HealthCheck] = []
    for beacon in paired {
      for problem in StatusVerdicts.problems(beacon) {
        checks.append(check(problem, beacon, settings: settings))
      }
    }
    if checks.isEmpty {
      checks.append(
        HealthCheck(
          .bluetooth, "beacon health", .ok, "\(paired.count) paired beacon(s) heard, none with a problem"))
    }
    return checks
  }

  /// One paired beacon's problem as a warning.
  private static func check(
    _ problem: StatusVerdicts.BeaconProblem, _ beacon: StatusDocument.PairedBeacon, settings: HealthSettings
  ) -> HealthCheck {
    let health = beacon.health
    switch problem {
    case .batteryLow:
      let reading = health.batteryMillivolts.map { "battery \($0) mV" } ?? "battery low"
      let age = health.telemetryAgeSeconds.map { ", read \(Int($0)) s ago" } ?? ""
      return HealthCheck(
        .bluetooth, "beacon battery", .warning,
        "\(beacon.name): \(reading), below \(formatted(settings.lowBatteryMillivolts)) mV\(age)",
        fix: "replace the beacon's battery (a CR2477/CR2032 cell) before it stops advertising")
    case .silent:
      let ago = beacon.lastSeenAgoSeconds.map { "not seen for \(Int($0)) s" } ?? "not seen"
      return HealthCheck(
        .bluetooth, "beacon silent", .warning,
        "\(beacon.name): \(ago) (silentAfter \(formatted(settings.silentAfter)) s)",
        fix: "check that the beacon is in the vehicle, powered and within range")
    case .rebooted:
      let when = beacon.lastRebootAgoSeconds.map { ", last \(Int($0)) s ago" } ?? ""
      return HealthCheck(
        .bluetooth, "beacon reboot", .warning,
        "\(beacon.name): restarted \(health.reboots) time(s) (its uptime went backwards)\(when)",
        fix: "a weak battery or a loose contact restarts a beacon: check the battery")
    case .possibleClone:
      let from =
        health.cloneAddresses.isEmpty ? "two addresses" : health.cloneAddresses.joined(separator: " and ")
      return HealthCheck(
        .bluetooth, "beacon clone", .warning,
        "\(beacon.name): its identity, sent in clear, is heard from \(from) at once, again and again: another transmitter copies it, and can tag trips as this device",
        fix:
          "pair \(beacon.deviceId) by key instead (beaconbridge pair --eid-key-file FILE --rotation-exponent K --beacon-clock N --device-id \(beacon.deviceId), or --irk-file FILE), then set [ActiveBeacon] requireAuthenticated = true"
      )
    }
  }

  /// How the pairings prove their beacons (docs/authentication.md): a pairing by an identity sent
  /// in clear can be cloned by any phone unless `requireAuthenticated` keeps it from the active
  /// beacon; a replayed EID means a recording of a paired beacon is played back nearby (or a
  /// beacon's clock went back after a power loss).
  static func authentication(_ facts: StatusDocument.Authentication, requireAuthenticated: Bool)
    -> [HealthCheck]
  {
    var checks: [HealthCheck] = []
    if facts.plainPairings > 0, !requireAuthenticated {
      checks.append(
        HealthCheck(
          .configuration, "cloneable pairing", .warning,
          "\(facts.plainPairings) pairing(s) by an identity sent in clear (iBeacon, AltBeacon, Eddystone-UID): any phone can clone it and tag trips",
          fix:
            "pair the beacons by key (beaconbridge pair --eid-key-file FILE --rotation-exponent K --beacon-clock N, or --irk-file FILE), then set [ActiveBeacon] requireAuthenticated = true"
        ))
    }
    if facts.eidReplaysRefused > 0 {
      checks.append(
        HealthCheck(
          .bluetooth, "EID replay", .warning,
          "\(facts.eidReplaysRefused) replayed Eddystone-EID frame(s) refused since the daemon started: a recording of a paired beacon is played back nearby, or a beacon's clock went back after a power loss",
          fix:
            "look for a device near the vehicle repeating a beacon's frames; a beacon restored after a power loss is accepted again once its clock passes the window heard last"
        ))
    }
    if facts.rpaReplaysRefused > 0 {
      checks.append(
        HealthCheck(
          .bluetooth, "RPA replay", .warning,
          "\(facts.rpaReplaysRefused) advertisement(s) from a paired device's private address refused since the daemon started: the address was first heard more than rpaMaxAge ago, or before a newer one of that device, so a transmitter nearby repeats an address it heard",
          fix:
            "look for a device near the vehicle copying a paired device's address; a device that keeps one address longer than [ActiveBeacon] rpaMaxAge needs a larger rpaMaxAge"
        ))
    }
    if facts.irkPairings > 0 {
      // The chance a random address matches: N / 2^24, as "1 in M".
      let oneIn = Int((16_777_216 / Double(facts.irkPairings)).rounded(.down))
      checks.append(
        HealthCheck(
          .configuration, "RPA false match", .ok,
          "\(facts.irkPairings) pairing(s) by IRK: a random private address matches one by chance about 1 in \(oneIn) (N / 2^24; at most \(KeyedIdentity.maximumIRKPairings) IRKs keep it under 1 in 100,000)"
        ))
    }
    if checks.allSatisfy({ $0.status == .ok }), facts.plainPairings + facts.keyPairings > 0 {
      let how =
        requireAuthenticated ? "only beacons proven by a key may become active" : "every pairing is by key"
      checks.append(HealthCheck(.configuration, "authentication", .ok, "\(how); no replay seen"))
    }
    return checks
  }

  /// The daemon's `upload` state (docs/dbus-api.md) as the "delivery" check, as
  /// `StatusVerdicts.delivery` judges it: what the sink last said when posting fails, in its own
  /// words.
  public static func delivery(_ upload: StatusDocument.Upload, mqtt: Bool) -> HealthCheck {
    let sink = mqtt ? "the MQTT broker" : "the backend"
    switch upload.state {
    case .failing:
      let failures = max(1, upload.consecutiveFailures)
      let retry = upload.retryInSeconds.map { "; the next try is in \(formatted($0)) s" } ?? ""
      let reason = upload.lastError ?? "no reason given"
      return HealthCheck(
        .upload, "delivery", StatusVerdicts.delivery(upload),
        "the last \(failures) post(s) to \(sink) failed: \(reason)\(retry); nothing is lost, batches wait in the outbox",
        fix: mqtt
          ? "check the broker's address, credentials ([MQTT] Username, PasswordFile), TLS files and the network"
          : "check [Upload] URL, the token file, TLS files and the network")
    case .delivering:
      let ago = upload.lastDeliveredAgoSeconds.map { ", the last \(formatted($0)) s ago" } ?? ""
      return HealthCheck(.upload, "delivery", .ok, "\(upload.delivered) batch(es) delivered to \(sink)\(ago)")
    case .idle:
      return HealthCheck(.upload, "delivery", .ok, "nothing posted to \(sink) since the daemon started")
    }
  }

  /// The fleet link (docs/fleet.md) as the "fleet link" check: connected is ok, not connected
  /// a warning with the broker's reason (the box runs on; the fleet only cannot see it).
  public static func fleetLink(_ fleet: StatusDocument.Fleet?) -> HealthCheck? {
    guard let fleet else { return nil }
    let versions =
      "desired version seen: \(fleet.lastDesiredVersion.map(String.init) ?? "none"), applied: \(fleet.appliedVersion.map(String.init) ?? "none")"
    guard fleet.connected else {
      return HealthCheck(
        .upload, "fleet link", .warning,
        "box \(fleet.boxId) is not connected to \(fleet.broker): \(fleet.lastProblem ?? "no reason given"); \(versions)",
        fix:
          "check [Fleet] URL (or the [Upload] broker), the [MQTT] credentials, the TLS files and the network")
    }
    return HealthCheck(
      .upload, "fleet link", .ok, "box \(fleet.boxId) connected to \(fleet.broker); \(versions)")
  }

  /// What the scan dropped, as `StatusVerdicts.dropped` judges it; nil when it dropped nothing.
  static func dropped(_ status: StatusDocument) -> HealthCheck? {
    let verdict = StatusVerdicts.dropped(status)
    guard verdict != .ok else { return nil }
    return HealthCheck(
      .bluetooth, "dropped advertisements", verdict,
      "\(status.droppedAdvertisements) advertisement(s) dropped while the bridge was busy, \(status.manufacturerDataOverLimit) data entr(ies) past a device's 32 left out",
      fix:
        "the box cannot keep up with the advertisements around it: see journalctl -u beaconbridge for what held the bridge; a device past 32 entries sends more than BlueZ keeps"
    )
  }

  private static func formatted(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(value)
  }

  /// Every check, in the report's order, each judged by its own function from typed facts:
  /// no verdict or fix depends on the wording of a message.
  public static func evaluate(_ facts: DoctorFacts) -> HealthReport {
    let config = try? facts.configuration.get()
    var checks: [HealthCheck] = []
    checks += stateDirectory(facts)
    if config?.backend == .hci, !facts.isRoot { checks.append(rawHCIAccess()) }
    checks.append(configuration(facts))
    if let bluez = facts.bluez {
      checks += bluetooth(bluez, kernelAdapters: facts.kernelAdapters, config: config)
    }
    switch facts.daemon {
    case .success(let status): checks += daemon(status, config: config)
    case .failure(let unavailable):
      checks.append(HealthCheck(.bluetooth, "daemon", .warning, unavailable.reason, fix: unavailable.fix))
    }
    if let store = facts.store { checks.append(self.store(store)) }
    if let free = facts.freeBytes { checks.append(freeDisk(free, in: facts.stateDirectory)) }
    if let config { checks += upload(config, configPath: facts.configPath) }
    if case .success(let status) = facts.daemon {
      checks.append(delivery(status.upload, mqtt: config?.mqttSettings != nil))
      if let check = fleetLink(status.fleet) { checks.append(check) }
    }
    checks += facts.tokenFiles.map(tokenFile)
    if case .success(let result)? = facts.store { checks += outbox(result.outbox) }
    if let config, let search = facts.eidSearch, let check = coldSearch(search, config: config) {
      checks.append(check)
    }
    // Every detail and recommendation goes through the one redaction function.
    var redactor = facts.redactor
    if let config {
      for secret in Redactor(configuration: config, readingTokenFiles: false).secrets { redactor.add(secret) }
    }
    return HealthReport(checks: checks).redacted(by: redactor)
  }

  /// Whether the state directory can hold the store.
  static func stateDirectory(_ facts: DoctorFacts) -> [HealthCheck] {
    if let problem = facts.stateDirectoryProblem {
      return [
        HealthCheck(
          .permissions, "state directory", .critical, "\(facts.stateDirectory) \(problem)",
          fix: facts.stateDirectoryFix ?? "run as root or the beaconbridge user, or pass --state-dir")
      ]
    }
    if let readOnly = facts.stateDirectoryNotWritable {
      let read: String
      if case .success? = facts.store { read = "its store was read without writing, but " } else { read = "" }
      return [
        HealthCheck(
          .permissions, "state directory", .warning,
          "\(facts.stateDirectory) \(readOnly.problem); \(read)the daemon could not keep its store there",
          fix: readOnly.fix)
      ]
    }
    return [HealthCheck(.permissions, "state directory", .ok, "\(facts.stateDirectory) is writable")]
  }

  static func rawHCIAccess() -> HealthCheck {
    HealthCheck(
      .permissions, "raw HCI access", .warning, "the hci backend needs CAP_NET_RAW and CAP_NET_ADMIN",
      fix: "run the service with the hci override (AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN)")
  }

  static func configuration(_ facts: DoctorFacts) -> HealthCheck {
    switch facts.configuration {
    case .success(let c):
      let what =
        facts.configExists
        ? "\(facts.configPath) is valid" : "\(facts.configPath) is absent: the defaults apply"
      return HealthCheck(.configuration, "configuration", .ok, "\(what) (backend \(c.backend.rawValue))")
    case .failure(let error):
      return HealthCheck(
        .configuration, "configuration", .critical, error.description,
        fix: "fix \(error.line > 0 ? "that line" : "the file"); the daemon refuses to start until then")
    }
  }

  /// bluetoothd and the adapter, as the probe found them.
  static func bluetooth(_ bluez: BlueZProbe.Result, kernelAdapters: [String]?, config: DaemonConfiguration?)
    -> [HealthCheck]
  {
    switch bluez {
    case .unavailable(let why): bluetoothdAbsent(why, kernelAdapters: kernelAdapters)
    case .running(_, let adapters):
      [HealthCheck(.bluetooth, "bluetoothd", .ok, "org.bluez is on the system bus")]
        + adapter(adapters, wanted: config?.adapter?.name)
    }
  }

  /// Why BlueZ cannot be asked: without the system bus, dbus is the fix; without bluetoothd and
  /// with no controller in the kernel, the adapter is what is missing (Debian starts bluetoothd
  /// only once one appears, bluetooth.target); else bluetoothd itself.
  static func bluetoothdAbsent(_ why: BlueZProbe.Unavailable, kernelAdapters: [String]?) -> [HealthCheck] {
    switch why {
    case .systemBusUnreachable:
      return [
        HealthCheck(
          .bluetooth, "bluetoothd", .critical, why.description, fix: "start dbus: systemctl start dbus")
      ]
    case .bluetoothdAbsent, .bluetoothdNotAnswering:
      guard kernelAdapters?.isEmpty == true else {
        return [
          HealthCheck(
            .bluetooth, "bluetoothd", .critical, why.description,
            fix: "start it: systemctl start bluetooth (or use backend = hci)")
        ]
      }
      return [
        HealthCheck(
          .bluetooth, "bluetoothd", .warning, "\(why.description); it starts when an adapter appears"),
        HealthCheck(
          .bluetooth, "adapter", .critical, "no Bluetooth adapter on this machine (/sys/class/bluetooth)",
          fix: "plug one in; check 'dmesg | grep -i bluetooth' and 'rfkill list'. Scanning starts by itself"),
      ]
    }
  }

  /// The configured adapter (else the first powered one) and its scan mode.
  static func adapter(_ adapters: [BlueZProbe.AdapterFacts], wanted: String?) -> [HealthCheck] {
    let chosen = adapters.first { wanted == nil ? $0.powered : $0.name == wanted } ?? adapters.first
    guard let adapter = chosen else {
      return [
        HealthCheck(
          .bluetooth, "adapter", .critical, wanted.map { "no adapter \($0)" } ?? "BlueZ has no adapter",
          fix: "plug one in; check btmgmt info")
      ]
    }
    let name = "\(adapter.name)\(adapter.address.map { " (\($0))" } ?? "")"
    let power =
      adapter.powered
      ? HealthCheck(.bluetooth, "adapter", .ok, "\(name) is powered")
      : HealthCheck(
        .bluetooth, "adapter", .critical, "\(name) is off",
        fix: "power it: bluetoothctl power on; check rfkill list")
    let mode = HealthCheck(
      .bluetooth, "scan mode", .ok,
      adapter.passiveMonitoring
        ? "passive AdvertisementMonitor available" : "active discovery (no passive monitor on this adapter)")
    return [power, mode]
  }

  /// What the running daemon says: scanning, the active beacon, drops, beacon health,
  /// authentication.
  static func daemon(_ status: StatusDocument, config: DaemonConfiguration?) -> [HealthCheck] {
    var checks = [scanning(status)]
    if let active = status.activeBeacon {
      checks.append(HealthCheck(.bluetooth, "active beacon", .ok, "\(active.deviceId) is active"))
    } else {
      checks.append(
        HealthCheck(
          .bluetooth, "active beacon", .warning, "no paired beacon is active",
          fix: "pair the vehicle's beacon: beaconbridge pair --uuid U --major M --minor N --device-id ID"))
    }
    if let check = dropped(status) { checks.append(check) }
    checks += beaconHealth(status, settings: config?.bridge.health ?? HealthSettings())
    checks += authentication(
      status.authentication, requireAuthenticated: config?.bridge.requireAuthenticated ?? false)
    return checks
  }

  /// Whether the daemon scans; when it does not, what it waits for (docs/dbus-api.md, `scan`):
  /// a scan waiting for an adapter (`ScanWait.Reason.wantsAdapter`) is fixed by one.
  static func scanning(_ status: StatusDocument) -> HealthCheck {
    let beacons = status.beaconsInRange.count
    if let scanning = status.scanning {
      return HealthCheck(
        .bluetooth, "scanning", StatusVerdicts.scanning(status),
        "the daemon scans with \(scanning); \(beacons) beacon(s) in range",
        fix: beacons > 0
          ? nil : "no advertisements are arriving: check that the beacon is powered and in range")
    }
    let detail = status.scan.detail
    let wantsAdapter = status.scan.state == .waiting && status.scan.reason?.wantsAdapter == true
    return HealthCheck(
      .bluetooth, "scanning", StatusVerdicts.scanning(status),
      detail.map { "the daemon runs but does not scan: \($0)" } ?? "the daemon runs but does not scan",
      fix: wantsAdapter
        ? "plug in a Bluetooth adapter (or power it: btmgmt power on); scanning starts by itself"
        : "see journalctl -u beaconbridge")
  }

  static func store(_ store: Result<(check: String, outbox: OutboxSummary), StoreError>) -> HealthCheck {
    switch store {
    case .success(let result):
      HealthCheck(
        .storage, "store", result.check == "ok" ? .ok : .critical,
        result.check == "ok" ? "the store is healthy" : "integrity check: \(result.check)",
        fix: "stop the daemon, keep the file for support, move it aside")
    case .failure(let error):
      HealthCheck(.storage, "store", .critical, error.description, fix: "see the message")
    }
  }

  /// The worst cold search (`ColdSearchLimit`) of the store's EID pairings with the tolerance the
  /// daemon runs with (the file's, under the fleet's applied settings): past the limit, the daemon
  /// refuses to start, so it is critical, with the refusal's own sentence.
  static func coldSearch(
    _ search: (rotationExponents: [UInt8], fleetSettings: [FleetSetting]), config: DaemonConfiguration
  ) -> HealthCheck? {
    guard !search.rotationExponents.isEmpty else { return nil }
    let tolerance = DaemonSettings.bridge(file: config, remote: search.fleetSettings).eidClockTolerance
    if let refusal = ColdSearchLimit.refusal(
      eidClockTolerance: tolerance, rotationExponents: search.rotationExponents)
    {
      return HealthCheck(
        .configuration, "cold EID search", .critical, refusal + "; the daemon refuses to start with it",
        fix:
          "lower [ActiveBeacon] eidClockTolerance, or unpair fast-rotating EID beacons (beaconbridge unpair)")
    }
    let seconds = ColdSearchLimit.worstSeconds(
      eidClockTolerance: tolerance, rotationExponents: search.rotationExponents)
    let shown = ColdSearchLimit.duration(Int64(seconds.rounded(.up)))
    return HealthCheck(
      .configuration, "cold EID search", .ok,
      "\(search.rotationExponents.count) Eddystone-EID pairing(s) with eidClockTolerance = \(ColdSearchLimit.toleranceSeconds(tolerance)) s: one cold search takes up to \(shown) at the search budget, within the limit of \(ColdSearchLimit.duration(ColdSearchLimit.maximumSeconds))"
    )
  }

  static func freeDisk(_ free: UInt64, in directory: String) -> HealthCheck {
    let mb = free / 1_000_000
    let status: HealthCheck.Status = mb < 10 ? .critical : mb < 100 ? .warning : .ok
    return HealthCheck(
      .storage, "free disk", status, "\(mb) MB free in \(directory)",
      fix: "free space: the outbox needs room to hold trips while offline")
  }

  /// The upload's URL and, for MQTT, the sink and its credentials' transport.
  static func upload(_ c: DaemonConfiguration, configPath: String) -> [HealthCheck] {
    guard let url = c.uploadURL else {
      return [
        HealthCheck(
          .upload, "backend URL", .warning, "no [Upload] URL: batches wait in the outbox",
          fix: "set [Upload] URL in \(configPath)")
      ]
    }
    var checks = [HealthCheck(.upload, "backend URL", .ok, url)]
    guard let mqtt = c.mqttSettings else { return checks }
    checks.append(
      HealthCheck(
        .upload, "MQTT sink", .ok,
        "MQTT 5, QoS 1 to \(mqtt.host):\(mqtt.port)\(mqtt.tls ? " over TLS" : ""), topic \(mqtt.topic), "
          + "client ID \(mqtt.clientId), session kept \(mqtt.sessionExpiry) s, keep-alive \(mqtt.keepAlive) s"
      ))
    if !mqtt.tls, mqtt.username != nil {
      checks.append(
        HealthCheck(
          .upload, "MQTT sink", .warning,
          "[MQTT] Username is set but the URL is mqtt://: the password travels in clear",
          fix: "use an mqtts:// URL in [Upload] URL"))
    }
    if mqtt.username == nil, mqtt.passwordFile != nil {
      checks.append(
        HealthCheck(
          .upload, "MQTT sink", .warning,
          "[MQTT] PasswordFile is set without a Username: it is not used",
          fix: "set [MQTT] Username in \(configPath)"))
    }
    return checks
  }

  static func tokenFile(_ token: DoctorFacts.TokenFileCheck) -> HealthCheck {
    guard let problem = token.problem else {
      return HealthCheck(
        .upload, "token file", .ok, "\(token.key): \(token.path) is a private, non-empty regular file")
    }
    return HealthCheck(
      .upload, "token file", .critical, "\(token.key): \(token.path) \(problem.problem); nothing is sent",
      fix: problem.fix)
  }

  /// The outbox's backlog, dead letters and held trips.
  static func outbox(_ outbox: OutboxSummary) -> [HealthCheck] {
    let status = StatusVerdicts.backlog(undelivered: outbox.undelivered, limit: outbox.limit)
    let age = outbox.oldestAge.map { ", oldest \(Int($0)) s old" } ?? ""
    var checks = [
      HealthCheck(
        .upload, "outbox", status, "\(outbox.undelivered) of \(outbox.limit) batches waiting\(age)",
        fix:
          "the backend is not taking batches: check the URL, the token and the network; at the limit new batches are refused"
      )
    ]
    if outbox.deadLetters > 0 {
      checks.append(
        HealthCheck(
          .upload, "dead letters", .warning, "\(outbox.deadLetters) batch(es) refused by the backend",
          fix: "see the log for the backend's reason"))
    }
    if outbox.unresolvedTrips > 0 {
      checks.append(
        HealthCheck(
          .upload, "unresolved trips", .warning, "\(outbox.unresolvedTrips) trip(s) held without a device ID",
          fix: "beaconbridge trip assign --trip-id ID --device-id X"))
    }
    return checks
  }
}
