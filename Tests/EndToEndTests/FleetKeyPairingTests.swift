import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Pairings by key in the fleet's desired document (docs/fleet.md), over TLS: the daemon on the
/// dbusmock BlueZ, its fleet link on a Mosquitto TLS listener with a test CA. The document's
/// Eddystone-EID key (the crypto oracle's, Tests/Crypto/vectors.json) resolves the beacon as soon
/// as it is applied; the next version with the same key keeps its pairing; one whose EID pairings
/// and tolerance would take a cold search past its limit is refused and changes nothing; no
/// output, and not the daemon's log, holds a key.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct FleetKeyPairingTests {
  @Test func anEIDKeyFromTheDesiredDocumentResolvesTheBeaconAndNoOutputHoldsIt() async throws {
    let vector = try OracleVectors.firstEID()
    let (identityKey, k, clock, eid) = (
      vector.identityKey, vector.rotationExponent, vector.beaconClock, vector.eid
    )
    // The document's beaconClock is the beacon's clock when the box applies it: the vector's EID
    // holds for the rest of its window, long enough for the test.
    #expect(clock % (1 << k) < (1 << k) - 120)
    let irk = "ec0234a357c8ad05341010a60a397d9b"

    let pki = try TestPKI()
    defer { try? FileManager.default.removeItem(atPath: pki.dir) }
    let (broker, tlsPort) = try MosquittoBroker.withTLS(pki)
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = try scratchDirectory("fleet-keys")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    func writeConfig(eidClockTolerance: String = "") throws {
      try """
      [ActiveBeacon]
      dwellSeconds = 0.5
      \(eidClockTolerance.isEmpty ? "" : "eidClockTolerance = " + eidClockTolerance)
      [Upload]
      CAFile = \(pki.ca)
      [MQTT]
      ClientId = van-9
      KeepAlive = 5
      [Fleet]
      BoxId = van-9
      URL = mqtts://127.0.0.1:\(tlsPort)
      """.write(toFile: config, atomically: true, encoding: .utf8)
    }
    try writeConfig()

    let reported = try MQTTWatcher(broker, topic: "fleet/van-9/config/reported")
    func answers() -> [String] {
      reported.messages.map {
        "\($0.payload["state"]?.stringValue ?? "?")@\($0.payload["version"]?.intValue.map(String.init) ?? "-")"
      }
    }
    func document(_ version: Int, label: String, withIRK: Bool) -> String {
      let eidPairing =
        #"{"eid":{"identityKey":"\#(identityKey)","rotationExponent":\#(k),"beaconClock":\#(clock)},"deviceId":"UNIT-E1","label":"\#(label)"}"#
      let irkPairing = #"{"irk":"\#(irk)","deviceId":"UNIT-R1"}"#
      return #"{"version":\#(version),"pairings":[\#(eidPairing)\#(withIRK ? "," + irkPairing : "")]}"#
    }
    let logPath = dir + "/daemon.log"
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: fixture.bus.address, log: logPath)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    try await waitUntil("daemon log:\n\(log())") { log().contains("ready: serving") }

    let cli = DaemonEndToEndTests()
    let bus = fixture.bus.address
    var outputs = ""
    func pairs() async throws -> [JSONValue] {
      let run = try await cli.cli(["pairs", "--json"], bus: bus, dir: dir)
      outputs += run.stdout + run.stderr
      return try JSONValue.parse(Data(run.stdout.utf8)).arrayValue ?? []
    }
    func status() async throws -> JSONValue? {
      let run = try await cli.cli(["status", "--json"], bus: bus, dir: dir)
      outputs += run.stdout + run.stderr
      return try? JSONValue.parse(Data(run.stdout.utf8))
    }

    let desired = "fleet/van-9/config/desired"
    try await broker.publish(desired, document(1, label: "driver tag", withIRK: true))
    try await waitUntil("v1 applied: \(answers())\n\(log())\n\(broker.log)") { answers() == ["applied@1"] }
    let first = try await pairs()
    #expect(
      first.map { "\($0["deviceId"]?.stringValue ?? "?")/\($0["source"]?.stringValue ?? "?")" } == [
        "UNIT-E1/fleet", "UNIT-R1/fleet",
      ])
    #expect(first.map { $0["authentication"]?.stringValue } == ["eid", "rpa"])
    let number = try #require(first.first?["pairing"]?.intValue)
    #expect(log().contains("desired version 1 applied: 2 pairing(s), 0 setting(s)"), "\(log())")

    // The key authenticator follows the apply: the beacon resolves, with no restart.
    let serviceData: DBusValue = .dictionary(
      key: "s", value: "v",
      [.init(.string(ServiceUUID.eddystone.description), .variant(.bytes([0x30, 0xEB] + eid)))])
    let device = try await fixture.addDevice("hci0", "C0:FF:EE:00:0E:02")
    try await waitUntil("the EID beacon resolved; log:\n\(log())") {
      try await fixture.advertise(device, ["ServiceData": serviceData, "RSSI": .int16(-60)])
      let active = try await status()?["activeBeacon"]
      return active?["authentication"]?.stringValue == "eid" && active?["deviceId"]?.stringValue == "UNIT-E1"
    }

    // v2 keeps the EID key (a new label) and drops the IRK: the same pairing, the IRK gone.
    try await broker.publish(desired, document(2, label: "cab", withIRK: false))
    try await waitUntil("v2 applied: \(answers())\n\(log())") { answers().last == "applied@2" }
    let second = try await pairs()
    #expect(second.map { $0["deviceId"]?.stringValue } == ["UNIT-E1"])
    #expect(second.first?["pairing"]?.intValue == number)
    #expect(second.first?["label"]?.stringValue == "cab")
    // The same document again, as at a reconnect: answered, not applied twice.
    try await broker.publish(desired, document(2, label: "cab", withIRK: false))
    try await waitUntil("v2 answered again: \(answers())") {
      answers() == ["applied@1", "applied@2", "applied@2"]
    }
    #expect(log().components(separatedBy: "desired version 2 applied").count == 2, "\(log())")

    // v3: 100 EID pairings at K = 0 and a week of tolerance, one cold search past the limit
    // (docs/authentication.md): refused whole with the sentence, and v2's pairing and version stay.
    let many = (0..<100).map { n in
      #"{"eid":{"identityKey":"\#(String(format: "%032x", n + 1))","rotationExponent":0,"beaconClock":0},"deviceId":"UNIT-K\#(n)"}"#
    }
    try await broker.publish(
      desired,
      #"{"version":3,"pairings":[\#(many.joined(separator: ","))],"settings":{"ActiveBeacon":{"eidClockTolerance":604800}}}"#
    )
    try await waitUntil("v3 refused: \(answers())\n\(log())") { answers().last == "refused@3" }
    let reason = reported.messages.last?.payload["reason"]?.stringValue ?? ""
    #expect(
      reason.hasPrefix(
        "[ActiveBeacon] eidClockTolerance = 604800 s with 100 Eddystone-EID pairing(s), 100 of them fast-rotating"
      ),
      "\(reason)")
    let third = try await pairs()
    #expect(third.map { $0["deviceId"]?.stringValue } == ["UNIT-E1"])
    #expect(third.first?["pairing"]?.intValue == number)
    #expect(try await status()?["fleet"]?["appliedVersion"]?.intValue == 2)

    // v4 waits for a trip: 200 EID pairings at K = 0, within the file's day of tolerance. A
    // reload raises the tolerance to a week, which the store's one EID pairing allows; at the
    // trip's end v4 is checked again with the week and refused, v2 staying.
    #expect(try await cli.cli(["trip", "start", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    let more = (0..<200).map { n in
      #"{"eid":{"identityKey":"\#(String(format: "%032x", n + 1))","rotationExponent":0,"beaconClock":0},"deviceId":"UNIT-K\#(n)"}"#
    }
    try await broker.publish(desired, #"{"version":4,"pairings":[\#(more.joined(separator: ","))]}"#)
    try await waitUntil("v4 pending: \(answers())\n\(log())") { answers().last == "pending@4" }
    try writeConfig(eidClockTolerance: "604800")
    kill(daemon.processIdentifier, SIGHUP)
    try await waitUntil("the week reloaded: \(log())") { log().contains("configuration reloaded from") }
    #expect(try await cli.cli(["trip", "end", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    try await waitUntil("v4 refused at the trip's end: \(answers())\n\(log())") {
      answers().last == "refused@4"
    }
    let late = reported.messages.last?.payload["reason"]?.stringValue ?? ""
    #expect(
      late.hasPrefix(
        "[ActiveBeacon] eidClockTolerance = 604800 s with 200 Eddystone-EID pairing(s), 200 of them fast-rotating"
      ),
      "\(late)")
    #expect(try await pairs().map { $0["deviceId"]?.stringValue } == ["UNIT-E1"])
    #expect(try await status()?["fleet"]?["appliedVersion"]?.intValue == 2)

    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon))
    outputs += reported.messages.map(\.payload.compactText).joined(separator: "\n") + log()
    for key in [identityKey, irk] {
      #expect(!outputs.lowercased().contains(key.lowercased()))
    }
  }
}
