import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The desired document and the box's answer (`[Fleet]`, docs/fleet.md): checked whole, applied
/// between trips in one store transaction, answered on the reported topic. Real daemon, real
/// Mosquitto on loopback, the CLI over the daemon's D-Bus API.
@Suite(.tags(.process), .serialized, .timeLimit(.minutes(4)))
struct FleetDesiredTests {
  let cli = DaemonEndToEndTests()
  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  static func document(_ version: Int, _ devices: [(minor: Int, deviceId: String)], settings: String = "{}")
    -> String
  {
    let pairings = devices.map {
      #"{"uuid":"\#(uuid)","major":1,"minor":\#($0.minor),"deviceId":"\#($0.deviceId)","label":"van"}"#
    }
    return
      #"{"version":\#(version),"pairings":[\#(pairings.joined(separator: ","))],"settings":\#(settings)}"#
  }

  /// One box: its broker, bus, state directory and configuration, and a watcher on its
  /// reported topic.
  final class Box: @unchecked Sendable {
    let broker: MosquittoBroker
    let bus: PrivateBus
    let dir: String
    let config: String
    let reported: MQTTWatcher
    var daemon: MonitoredDaemon?

    init(_ name: String) throws {
      broker = try MosquittoBroker()
      bus = try PrivateBus.start()
      dir = try scratchDirectory(name)
      config = try FleetPresenceTests.configuration(in: dir, broker: broker, boxId: name)
      reported = try MQTTWatcher(broker, topic: "fleet/\(name)/config/reported")
    }

    deinit {
      bus.stop()
      try? FileManager.default.removeItem(atPath: dir)
    }

    func start(environment: [String: String] = [:]) async throws {
      let daemon = try MonitoredDaemon(
        config: config, stateDirectory: dir, bus: bus.address, extra: environment)
      self.daemon = daemon
      try await waitUntil("the daemon serves its API; log:\n\(daemon.log)", timeout: .seconds(20)) {
        (try? await DaemonEndToEndTests().cli(["status"], bus: bus.address, dir: dir).status) == 0
      }
    }

    /// The reported documents so far, as `state@version`.
    var answers: [String] {
      reported.messages.map {
        "\($0.payload["state"]?.stringValue ?? "?")@\($0.payload["version"]?.intValue.map(String.init) ?? "-")"
      }
    }

    /// The `fleet` object of `status --json`.
    func fleetStatus() async throws -> JSONValue? {
      let run = try await DaemonEndToEndTests().cli(["status", "--json"], bus: bus.address, dir: dir)
      return try JSONValue.parse(Data(run.stdout.utf8))["fleet"]
    }

    /// The last reported document's reason.
    var lastReason: String { reported.messages.last?.payload["reason"]?.stringValue ?? "" }

    /// `pair --eid-key-file` with an example key (through the daemon when it runs, else into the
    /// store).
    func pairByKey() async throws -> ProcessRun {
      let keyFile = dir + "/eid.key"
      try "000102030405060708090a0b0c0d0e0f\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
      chmod(keyFile, 0o600)
      return try await DaemonEndToEndTests().cli(
        [
          "pair", "--eid-key-file", keyFile, "--rotation-exponent", "10", "--beacon-clock", "65280",
          "--device-id", "UNIT-E1",
        ], bus: bus.address, dir: dir)
    }

    /// `pairs --json` (through the daemon when it runs, else from the store): device ID and source.
    func pairs() async throws -> [String] {
      let run = try await DaemonEndToEndTests().cli(["pairs", "--json"], bus: bus.address, dir: dir)
      let list = try JSONValue.parse(Data(run.stdout.utf8)).arrayValue ?? []
      return list.map { "\($0["deviceId"]?.stringValue ?? "?")/\($0["source"]?.stringValue ?? "?")" }
    }
  }

  @Test func appliedThenABadDocumentIsRefusedAndNothingChanges() async throws {
    let box = try Box("box1")
    try await box.start()
    let desired = "fleet/box1/config/desired"
    try await box.broker.publish(
      desired, Self.document(1, [(7, "VAN-7")], settings: #"{"Presence":{"exitTimeout":45}}"#))
    try await waitUntil("v1 applied: \(box.answers)\n\(box.daemon!.log)") { box.answers == ["applied@1"] }
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    #expect(
      box.daemon!.log.contains("desired version 1 applied: 1 pairing(s), 1 setting(s)"), "\(box.daemon!.log)")

    // The desired document owns the pairings: pair and unpair refuse, saying so.
    let pair = try await cli.cli(
      ["pair", "--uuid", Self.uuid, "--major", "1", "--minor", "9", "--device-id", "VAN-9"],
      bus: box.bus.address,
      dir: box.dir)
    #expect(pair.status == 1)
    #expect(pair.stderr.contains("this box is paired by its fleet"), "\(pair.stderr)")
    let unpair = try await cli.cli(["unpair", "--device-id", "VAN-7"], bus: box.bus.address, dir: box.dir)
    #expect(unpair.status == 1)
    #expect(unpair.stderr.contains("this box is paired by its fleet"), "\(unpair.stderr)")
    // And pairing by key, through the daemon's PairWithKey, with the same sentence.
    let byKey = try await box.pairByKey()
    #expect(byKey.status == 1)
    #expect(byKey.stderr.contains("this box is paired by its fleet"), "\(byKey.stderr)")
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    let settings: JSONValue = .object(["Presence": .object(["exitTimeout": .string("45")])])
    #expect(try await box.fleetStatus()?["appliedSettings"] == settings)

    // v2 has one good pairing and one bad one: refused whole, with the rule it broke.
    let bad =
      #"{"version":2,"pairings":[{"uuid":"\#(Self.uuid)","major":1,"minor":8,"deviceId":"VAN-8"},{"uuid":"\#(Self.uuid)","major":70000,"minor":1,"deviceId":"VAN-X"}]}"#
    try await box.broker.publish(desired, bad)
    try await waitUntil("v2 refused: \(box.answers)") { box.answers == ["applied@1", "refused@2"] }
    let reason = box.lastReason
    #expect(reason.contains("pairings[1]") && reason.contains("70000"), "\(reason)")
    // Nothing changed: v1's pairings, settings and version.
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    let afterRefusal = try #require(try await box.fleetStatus())
    #expect(
      afterRefusal["appliedVersion"]?.intValue == 1 && afterRefusal["lastDesiredVersion"]?.intValue == 2)
    #expect(afterRefusal["appliedSettings"] == settings)
    // A setting that may not be set remotely: refused.
    try await box.broker.publish(
      desired, Self.document(3, [(8, "VAN-8")], settings: #"{"Upload":{"postRetryMax":5}}"#))
    try await waitUntil("v3 refused: \(box.answers)") { box.answers.last == "refused@3" }
    #expect(
      box.reported.messages.last?.payload["reason"]?.stringValue?.contains("cannot be set remotely") == true)
    // An older version than the applied one: refused.
    try await box.broker.publish(desired, Self.document(4, [(8, "VAN-8")]))
    try await waitUntil("v4 applied: \(box.answers)") { box.answers.last == "applied@4" }
    // Another document with the applied version: refused, as any version not above it.
    try await box.broker.publish(desired, Self.document(4, [(9, "VAN-9")]))
    try await waitUntil("another v4 refused: \(box.answers)") { box.answers.last == "refused@4" }
    #expect(box.lastReason == "version 4 is not above the applied version 4")
    #expect(try await box.pairs() == ["VAN-8/fleet"])
    // The applied document delivered again (a retained message at a reconnect): answered again.
    try await box.broker.publish(desired, Self.document(4, [(8, "VAN-8")]))
    try await waitUntil("v4 answered again: \(box.answers)") { box.answers.last == "applied@4" }
    try await box.broker.publish(desired, Self.document(3, [(9, "VAN-9")]))
    try await waitUntil("v3 refused as stale: \(box.answers)") { box.answers.last == "refused@3" }
    #expect(
      box.reported.messages.last?.payload["reason"]?.stringValue
        == "version 3 is not above the applied version 4")
    #expect(try await box.pairs() == ["VAN-8/fleet"])
    // Key material over mqtt:// (no TLS): refused.
    try await box.broker.publish(
      desired,
      #"{"version":5,"pairings":[{"uuid":"\#(Self.uuid)","deviceId":"VAN-9","irk":"00112233445566778899aabbccddeeff"}]}"#
    )
    try await waitUntil("v5 refused: \(box.answers)") { box.answers.last == "refused@5" }
    #expect(
      box.reported.messages.last?.payload["reason"]?.stringValue?.contains(
        "keys are refused over a connection without TLS") == true)
    // Over 2 MiB: refused unread, the box's memory bounded.
    let big = box.dir + "/big.json"
    try (#"{"version":9,"pairings":[],"pad":""# + String(repeating: "x", count: 3 << 20) + #""}"#).write(
      toFile: big, atomically: true, encoding: .utf8)
    try await box.broker.publish(desired, file: big)
    try await waitUntil("the big document refused: \(box.answers)") { box.answers.last == "refused@-" }
    #expect(
      box.reported.messages.last?.payload["reason"]?.stringValue == "the document is over 2097152 bytes")
    #expect(try await box.pairs() == ["VAN-8/fleet"])
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }

  /// Read exactly over the broker: a setting's number applied as written (1.5e-6 was applied as
  /// 2e-06, the default 1e-7 refused as 0), a misspelt pairing field refused by name (not the
  /// TLS sentence, and never left out to pair the whole major), a repeated key refused by name.
  @Test func numbersTyposAndRepeatedKeysOverTheBroker() async throws {
    let box = try Box("box-exact")
    try await box.start()
    let desired = "fleet/box-exact/config/desired"
    try await box.broker.publish(
      desired, Self.document(1, [(7, "VAN-7")], settings: #"{"Presence":{"exitMissProbability":1.5e-6}}"#))
    try await waitUntil("v1 applied: \(box.answers)\n\(box.daemon!.log)") { box.answers == ["applied@1"] }
    #expect(
      try await box.fleetStatus()?["appliedSettings"]
        == .object(["Presence": .object(["exitMissProbability": .string("1.5e-6")])]))
    try await box.broker.publish(
      desired,
      #"{"version":2,"pairings":[{"uuid":"\#(Self.uuid)","major":1,"mnior":7,"deviceId":"VAN-8"}]}"#)
    try await waitUntil("v2 refused: \(box.answers)") { box.answers.last == "refused@2" }
    #expect(
      box.lastReason
        == "pairings[0] has an unknown key \"mnior\" (a pairing has uuid, major, minor, deviceId, label)",
      "\(box.lastReason)")
    try await box.broker.publish(desired, #"{"version":3,"version":4,"pairings":[]}"#)
    try await waitUntil("the repeated key refused: \(box.answers)") { box.answers.last == "refused@-" }
    #expect(box.lastReason.contains("the key \"version\" appears twice in one object"), "\(box.lastReason)")
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    try await box.broker.publish(
      desired, Self.document(5, [(7, "VAN-7")], settings: #"{"Presence":{"exitMissProbability":1e-7}}"#))
    try await waitUntil("v5 applied: \(box.answers)") { box.answers.last == "applied@5" }
  }

  @Test func aDocumentDuringATripIsPendingThenAppliedAtItsEnd() async throws {
    let box = try Box("box2")
    try await box.start()
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "t1"], bus: box.bus.address, dir: box.dir).status == 0)
    let desired = "fleet/box2/config/desired"
    try await box.broker.publish(desired, Self.document(3, [(7, "VAN-7")]))
    try await waitUntil("v3 pending: \(box.answers)") { box.answers == ["pending@3"] }
    #expect(box.lastReason == "a trip is in progress")
    #expect(try await box.pairs() == [])
    // An older document does not replace the one waiting; the same one again is answered again.
    try await box.broker.publish(desired, Self.document(2, [(8, "VAN-8")]))
    try await waitUntil("v2 refused: \(box.answers)") { box.answers.last == "refused@2" }
    #expect(box.lastReason == "version 2 is not above the pending version 3")
    try await box.broker.publish(desired, Self.document(3, [(9, "VAN-9")]))
    try await waitUntil("another v3 refused: \(box.answers)") { box.answers.last == "refused@3" }
    #expect(box.lastReason == "version 3 is not above the pending version 3")
    try await box.broker.publish(desired, Self.document(3, [(7, "VAN-7")]))
    try await waitUntil("v3 pending again: \(box.answers)") { box.answers.last == "pending@3" }
    #expect(
      try await cli.cli(["trip", "end", "--trip-id", "t1"], bus: box.bus.address, dir: box.dir).status == 0)
    try await waitUntil("v3 applied at the trip's end: \(box.answers)") { box.answers.last == "applied@3" }
    #expect(box.answers == ["pending@3", "refused@2", "refused@3", "pending@3", "applied@3"])
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }

  /// A document's settings are checked over the configuration file's values, and again when it
  /// is applied: a file changed by SIGHUP while the document waited for the trip can make them
  /// break a rule, and the document is then refused with the rule, nothing changed.
  @Test func aDocumentWhoseSettingsNoLongerFitTheFileIsRefusedWhenApplied() async throws {
    let box = try Box("box5")
    _ = try FleetPresenceTests.configuration(
      in: box.dir, broker: box.broker, boxId: "box5", extra: "[Presence]\nexitTimeoutMax = 600\n")
    try await box.start()
    let desired = "fleet/box5/config/desired"
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "t1"], bus: box.bus.address, dir: box.dir).status == 0)
    // Above the default exitTimeoutMax (60), within the file's.
    try await box.broker.publish(
      desired, Self.document(1, [(7, "VAN-7")], settings: #"{"Presence":{"exitTimeout":300}}"#))
    try await waitUntil("v1 pending: \(box.answers)\n\(box.daemon!.log)") { box.answers == ["pending@1"] }
    _ = try FleetPresenceTests.configuration(
      in: box.dir, broker: box.broker, boxId: "box5", extra: "[Presence]\nexitTimeoutMax = 100\n")
    kill(box.daemon!.process.processIdentifier, SIGHUP)
    try await waitUntil("the file reloaded: \(box.daemon!.log)") {
      box.daemon!.log.contains("configuration reloaded from")
    }
    #expect(
      try await cli.cli(["trip", "end", "--trip-id", "t1"], bus: box.bus.address, dir: box.dir).status == 0)
    try await waitUntil("v1 refused at the trip's end: \(box.answers)") { box.answers.last == "refused@1" }
    #expect(
      box.lastReason
        == "its settings do not apply: invalid configuration: exitTimeoutMax must be at least exitTimeout",
      "\(box.lastReason)")
    #expect(try await box.pairs() == [])
    let fleet = try #require(try await box.fleetStatus())
    #expect(fleet["appliedVersion"] == .null && fleet["appliedSettings"] == .object([:]))
    // Within the new file: applied.
    try await box.broker.publish(
      desired, Self.document(2, [(7, "VAN-7")], settings: #"{"Presence":{"exitTimeout":100}}"#))
    try await waitUntil("v2 applied: \(box.answers)") { box.answers.last == "applied@2" }
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }

  /// SIGHUP does not restart the fleet link: a reload that changes `[Fleet]` says so, and one
  /// that leaves it alone (a changed line number included) says nothing of it.
  @Test func aReloadThatChangesFleetSaysTheLinkKeepsItsSettings() async throws {
    let box = try Box("box6")
    try await box.start()
    let warning = "[Fleet] or its broker changed"
    func reload(_ times: Int) async throws {
      kill(box.daemon!.process.processIdentifier, SIGHUP)
      try await waitUntil("reload \(times): \(box.daemon!.log)") {
        box.daemon!.log.components(separatedBy: "configuration reloaded from").count == times + 1
      }
    }
    // The same [Fleet], one line lower.
    _ = try FleetPresenceTests.configuration(
      in: box.dir, broker: box.broker, boxId: "box6", extra: "[Presence]\nexitTimeoutMax = 600\n")
    try String(contentsOfFile: box.config, encoding: .utf8).replacingOccurrences(
      of: "[Trips]", with: "\n[Trips]"
    )
    .write(toFile: box.config, atomically: true, encoding: .utf8)
    try await reload(1)
    #expect(!box.daemon!.log.contains(warning), "\(box.daemon!.log)")
    _ = try FleetPresenceTests.configuration(in: box.dir, broker: box.broker, boxId: "box6-renamed")
    try await reload(2)
    #expect(box.daemon!.log.contains(warning + " in \(box.config)"), "\(box.daemon!.log)")
    #expect(try await box.fleetStatus()?["boxId"] == .string("box6"))
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }

  @Test func aDocumentPublishedWhileStoppedIsAppliedAtStartAndTheVersionSurvives() async throws {
    let box = try Box("box3")
    let status = try MQTTWatcher(box.broker, topic: "fleet/box3/status")
    try await box.broker.publish("fleet/box3/config/desired", Self.document(5, [(7, "VAN-7"), (8, "VAN-8")]))
    try await box.start()
    try await waitUntil("v5 applied at start: \(box.answers)\n\(box.daemon!.log)") {
      box.answers == ["applied@5"]
    }
    #expect(try await box.pairs() == ["VAN-7/fleet", "VAN-8/fleet"])
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
    // Restarted: the birth says version 5, and the retained document is answered, not re-applied.
    try await box.start()
    try await waitUntil("the second birth: \(status.messages.map(\.payload))") {
      status.messages.filter { $0.payload["state"]?.stringValue == "online" }.count == 2
    }
    let births = status.messages.filter { $0.payload["state"]?.stringValue == "online" }
    #expect(births.map { $0.payload["configVersion"] } == [.null, .int(5)])
    try await waitUntil("answered again: \(box.answers)") { box.answers == ["applied@5", "applied@5"] }
    #expect(!box.daemon!.log.contains("desired version 5 applied"), "\(box.daemon!.log)")
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }

  /// A kill inside the apply transaction (after the new pairings are written, before the
  /// version) leaves the old document whole; the next start applies the new one whole.
  @Test func aKillWhileApplyingLeavesTheOldDocumentOrTheNew() async throws {
    let box = try Box("box4")
    try await box.start()
    let desired = "fleet/box4/config/desired"
    try await box.broker.publish(desired, Self.document(1, [(7, "VAN-7")]))
    try await waitUntil("v1 applied: \(box.answers)") { box.answers == ["applied@1"] }
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")

    try await box.start(environment: ["BEACONBRIDGE_TEST_FLEET_KILL_MIDWAY": "1"])
    let killed = box.daemon!
    try await box.broker.publish(desired, Self.document(2, [(8, "VAN-8"), (9, "VAN-9")]))
    try await waitUntil("the daemon killed inside the transaction") { !killed.process.isRunning }
    #expect(
      killed.process.terminationReason == .uncaughtSignal && killed.process.terminationStatus == SIGKILL)
    // Read from the store itself (no daemon): the old pairings, whole.
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    // Straight into the store, pair refuses too: the store knows the fleet owns its pairings.
    let pair = try await cli.cli(
      ["pair", "--uuid", Self.uuid, "--major", "1", "--minor", "9", "--device-id", "VAN-9"],
      bus: box.bus.address,
      dir: box.dir)
    #expect(pair.status == 1)
    #expect(pair.stderr.contains("this box is paired by its fleet"), "\(pair.stderr)")
    let byKey = try await box.pairByKey()
    #expect(byKey.status == 1)
    #expect(byKey.stderr.contains("this box is paired by its fleet"), "\(byKey.stderr)")
    #expect(try await box.pairs() == ["VAN-7/fleet"])

    try await box.start()
    try await waitUntil("v2 applied at the restart: \(box.answers)") { box.answers.last == "applied@2" }
    #expect(try await box.pairs() == ["VAN-8/fleet", "VAN-9/fleet"])
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }

  /// `status` and `doctor` show the fleet link: broker, box ID, the last desired version seen
  /// and the applied one; a broker that is gone is doctor's warning, with the reason.
  @Test func statusAndDoctorShowTheFleetLink() async throws {
    let box = try Box("box6")
    try await box.start()
    let desired = "fleet/box6/config/desired"
    try await box.broker.publish(desired, Self.document(2, [(7, "VAN-7")]))
    try await waitUntil("v2 applied: \(box.answers)") { box.answers == ["applied@2"] }
    try await box.broker.publish(desired, Self.document(1, [(8, "VAN-8")]))
    try await waitUntil("v1 refused: \(box.answers)") { box.answers == ["applied@2", "refused@1"] }

    let json = try JSONValue.parse(
      Data(try await cli.cli(["status", "--json"], bus: box.bus.address, dir: box.dir).stdout.utf8))
    let fleet = try #require(json["fleet"], "\(json.compactText)")
    #expect(fleet["boxId"]?.stringValue == "box6")
    #expect(fleet["broker"]?.stringValue == "127.0.0.1:\(box.broker.port)")
    #expect(fleet["connected"] == .bool(true))
    #expect(fleet["lastDesiredVersion"]?.intValue == 1)
    #expect(fleet["appliedVersion"]?.intValue == 2)
    let text = try await cli.cli(["status"], bus: box.bus.address, dir: box.dir).stdout
    #expect(
      text.contains(
        "Fleet:         box box6 at 127.0.0.1:\(box.broker.port), connected; desired version seen 1, applied 2"
      ),
      "\(text)")
    func fleetCheck() async throws -> JSONValue? {
      let doctor = try await cli.cli(
        ["doctor", "--json", "--config", box.config, "--state-dir", box.dir], bus: box.bus.address,
        dir: box.dir)
      let checks = try JSONValue.parse(Data(doctor.stdout.utf8))["checks"]?.arrayValue ?? []
      return checks.first { $0["name"]?.stringValue == "fleet link" }
    }
    let ok = try #require(try await fleetCheck())
    #expect(ok["status"]?.stringValue == "ok", "\(ok.compactText)")
    #expect(
      ok["detail"]?.stringValue?.contains("desired version seen: 1, applied: 2") == true, "\(ok.compactText)")

    box.broker.kill()
    do {
      try await waitUntil("doctor warns of the lost broker") {
        try await fleetCheck()?["status"]?.stringValue == "warning"
      }
    } catch {
      Issue.record("doctor's fleet check: \(String(describing: try? await fleetCheck()))")
      throw error
    }
    #expect(try await fleetCheck()?["detail"]?.stringValue?.contains("not connected to 127.0.0.1") == true)
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }

  /// kill -9 at random moments while large documents are applied: after each kill the store
  /// holds one document's pairings whole (the last applied, or the one being applied), and the
  /// next start brings the box to the newest.
  @Test func killsAtRandomMomentsLeaveOneWholeDocument() async throws {
    let box = try Box("box7")
    let desired = "fleet/box7/config/desired"
    let size = 1500
    func pairs(_ version: Int) -> Set<String> { Set((0..<size).map { "V\(version)-\($0)/fleet" }) }
    func publish(_ version: Int) async throws {
      let file = box.dir + "/doc.json"
      try Self.document(version, (0..<size).map { ($0, "V\(version)-\($0)") }).write(
        toFile: file, atomically: true, encoding: .utf8)
      try await box.broker.publish(desired, file: file)
    }
    try await publish(1)
    var applied = 1
    for round in 2...6 {
      try await box.start()
      try await waitUntil("v\(applied) applied at start: \(box.answers)") {
        box.answers.last == "applied@\(applied)"
      }
      let daemon = box.daemon!
      try await publish(round)
      try await Task.sleep(for: .milliseconds(Int.random(in: 0...60)))
      kill(daemon.process.processIdentifier, SIGKILL)
      await waitForExit(daemon.process)
      let now = Set(try await box.pairs())
      #expect(
        now == pairs(applied) || now == pairs(round),
        "round \(round): \(now.count) pairings, mixed or partial")
      print(
        "fleet: round \(round) killed with v\(now == pairs(round) ? round : applied)'s pairings in the store")
      applied = round
    }
    try await box.start()
    try await waitUntil("v6 applied: \(box.answers)") { box.answers.last == "applied@6" }
    #expect(Set(try await box.pairs()) == pairs(6))
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }
}
