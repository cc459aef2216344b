import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// The desired document read whole (`FleetDocument.parse`): each rule it can break, the reason
/// the reported document gives, and the settings over the file's (`DaemonSettings`).
@Suite struct FleetDocumentTests {
  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  func parse(_ text: String) -> Result<FleetDocument, FleetRefusal> { FleetDocument.parse(Array(text.utf8)) }

  @Test func aGoodDocument() throws {
    let document = try parse(
      #"{"version":3,"pairings":[{"uuid":"\#(Self.uuid)","major":1,"minor":null,"deviceId":"VAN-7","label":"front"}],"settings":{"Presence":{"exitTimeout":45},"Trips":{"lateWindow":"10"}}}"#
    ).get()
    #expect(document.version == 3)
    #expect(
      document.pairings == [
        Pairing(uuid: UUID(uuidString: Self.uuid)!, major: 1, minor: nil, deviceId: "VAN-7", label: "front")
      ])
    #expect(
      document.settings == [
        FleetSetting(section: "Presence", key: "exitTimeout", value: "45"),
        FleetSetting(section: "Trips", key: "lateWindow", value: "10"),
      ])
  }

  @Test(
    arguments: [
      ("[]", nil, "the document is a JSON array, not an object"),
      ("{\"pairings\":[]}", nil, "the document has no version"),
      ("{\"version\":0}", nil, "version \"0\" is not above 0"),
      ("{\"version\":-3}", nil, "version \"-3\" is not above 0"),
      ("{\"version\":1.5}", nil, "version \"1.5\" is not a whole number"),
      ("{\"version\":\"3\"}", nil, "version must be a whole number above 0, not a string"),
      ("{\"version\":1e19}", nil, "version \"1e19\" is larger than the largest version, 9223372036854775807"),
      ("{\"version\":1e400}", nil, "version \"1e400\" is larger than the largest version"),
      ("{\"version\":9223372036854775808}", nil, "is larger than the largest version"),
      ("{\"version\":3,", nil, "the document is not valid JSON: Unexpected end of file"),
      ("{\"version\":3}}", nil, "the document is not valid JSON: Garbage at end"),
      (
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600), nil,
        "the document is nested more than 512 deep"
      ),
      ("{\"version\":3,\"version\":4}", nil, "the key \"version\" appears twice in one object"),
      ("{\"version\":2,\"pairings\":[],\"pairings\":[]}", nil, "the key \"pairings\" appears twice"),
      (
        "{\"version\":2,\"settings\":{\"Presence\":{\"exitTimeout\":40,\"exitTimeout\":50}}}", nil,
        "the key \"exitTimeout\" appears twice"
      ),
      (
        "{\"version\":2,\"pairings\":[{\"uuid\":\"\(uuid)\",\"major\":1,\"mnior\":7,\"deviceId\":\"A\"}]}", 2,
        "pairings[0] has an unknown key \"mnior\" (a pairing has uuid, major, minor, deviceId, label)"
      ),
      (
        "{\"version\":2,\"pairings\":[{\"uuid\":\"\(uuid)\",\"major\":1e400,\"deviceId\":\"A\"}]}", 2,
        "pairings[0]: major \"1e400\""
      ),
      (
        "{\"version\":2,\"pairings\":[{\"uuid\":\"\(uuid)\",\"major\":1.5,\"deviceId\":\"A\"}]}", 2,
        "pairings[0].major must be a whole number or null"
      ),
      (
        "{\"version\":2,\"settings\":{\"Presense\":{}}}", 2,
        "settings.Presense cannot be set remotely (a document sets keys of ActiveBeacon, Presence, Trips)"
      ),
      (
        "{\"version\":2,\"settings\":{\"Presence\":{\"exitTimeot\":3}}}", 2,
        "settings.Presence.exitTimeot cannot be set remotely"
      ),
      (
        "{\"version\":2,\"settings\":{\"ActiveBeacon\":{\"activeHold\":1e-400}}}", 2,
        "activeHold \"1e-400\" is too small to tell from 0"
      ),
      (
        "{\"version\":2,\"settings\":{\"ActiveBeacon\":{\"dwellSightings\":2.0000000000000001}}}", 2,
        "dwellSightings \"2.0000000000000001\" is not a whole number"
      ),
      ("{\"version\":2,\"colour\":1}", 2, "unknown key \"colour\""),
      ("{\"version\":2,\"pairings\":{}}", 2, "pairings must be an array"),
      ("{\"version\":2,\"pairings\":[{\"uuid\":\"nope\",\"deviceId\":\"A\"}]}", 2, "pairings[0]"),
      (
        "{\"version\":2,\"pairings\":[{\"uuid\":\"\(uuid)\",\"major\":70000,\"deviceId\":\"A\"}]}", 2, "70000"
      ),
      ("{\"version\":2,\"pairings\":[{\"uuid\":\"\(uuid)\",\"deviceId\":\"A\\nB\"}]}", 2, "pairings[0]"),
      (
        "{\"version\":2,\"pairings\":[{\"uuid\":\"\(uuid)\",\"deviceId\":\"A\"},{\"uuid\":\"\(uuid)\",\"deviceId\":\"B\"}]}",
        2, "pairings[1] repeats the beacon of pairings[0]"
      ),
      ("{\"version\":2,\"settings\":[]}", 2, "settings must be an object"),
      ("{\"version\":2,\"settings\":{\"Upload\":{\"postRetryMax\":5}}}", 2, "cannot be set remotely"),
      ("{\"version\":2,\"settings\":{\"Trips\":{\"sending\":\"postTrip\"}}}", 2, "cannot be set remotely"),
      ("{\"version\":2,\"settings\":{\"Presence\":{\"exitTimeout\":1e308}}}", 2, "exitTimeout"),
      (
        "{\"version\":2,\"settings\":{\"Presence\":{\"exitTimeout\":true}}}", 2,
        "must be a number, not boolean"
      ),
    ] as [(String, Int64?, String)])
  func aBadDocumentIsRefusedWithItsReason(text: String, version: Int64?, reason: String) {
    guard case .failure(let refusal) = parse(text) else {
      Issue.record("accepted: \(text)")
      return
    }
    #expect(refusal.version == version)
    #expect(refusal.reason.contains(reason), "\(refusal.reason)")
  }

  static let eidKey = "000102030405060708090a0b0c0d0e0f"
  static let irk = "F0E0D0C0B0A090807060504030201000"
  static func eid(_ key: String = eidKey, k: Int = 10, clock: Int = 65280, device: String = "UNIT-E1")
    -> String
  {
    #"{"eid":{"identityKey":"\#(key)","rotationExponent":\#(k),"beaconClock":\#(clock)},"deviceId":"\#(device)","label":"tag"}"#
  }

  /// EID and IRK pairings beside the plain ones, read by the scenario's parser for pairings by key.
  @Test func aDocumentWithKeys() throws {
    let text =
      #"{"version":4,"pairings":[{"uuid":"\#(Self.uuid)","major":1,"minor":7,"deviceId":"VAN-7"},\#(Self.eid()),{"irk":"\#(Self.irk)","deviceId":"UNIT-R1"}]}"#
    let document = try parse(text).get()
    #expect(document.pairings.map(\.deviceId) == ["VAN-7"])
    #expect(document.pairingCount == 3)
    #expect(document.keyPairings.map(\.pairing.deviceId) == ["UNIT-E1", "UNIT-R1"])
    #expect(document.keyPairings.map(\.pairing.label) == ["tag", nil])
    guard case .eid(let key, 10, 65280) = document.keyPairings[0].scheme,
      case .irk(let irk) = document.keyPairings[1].scheme
    else {
      Issue.record("not an EID and an IRK: \(document.keyPairings)")
      return
    }
    #expect(key.bytes == Array(0...15))
    #expect(irk.bytes == Hex.decode(Self.irk))
    // Nothing that prints the document prints a key.
    for printed in [String(describing: document), String(reflecting: document), "\(document.keyPairings)"] {
      #expect(
        !printed.lowercased().contains(Self.eidKey) && !printed.lowercased().contains(Self.irk.lowercased()))
    }
  }

  /// At most 167 pairings by IRK (the false-match bound, docs/authentication.md): the 168th is
  /// refused by its place, with the cap and the fix.
  @Test func moreIRKsThanTheCapAreRefused() throws {
    func document(irks: Int) -> String {
      let items = (0..<irks).map {
        #"{"irk":"\#(String(format: "%032x", $0 + 1))","deviceId":"UNIT-\#($0)"}"#
      }
      return #"{"version":5,"pairings":[\#(items.joined(separator: ","))]}"#
    }
    #expect(try parse(document(irks: 167)).get().keyPairings.count == 167)
    guard case .failure(let refusal) = parse(document(irks: 168)) else {
      Issue.record("168 IRKs were taken")
      return
    }
    #expect(refusal.reason.hasPrefix("pairings[167]: a box holds at most 167 pairings by IRK"))
    #expect(refusal.reason.contains("1 in 100,000") && refusal.reason.contains("unpair one first"))
  }

  /// The rules of the scenario's pairings by key, and one key once; no reason repeats a key.
  @Test(
    arguments: [
      (eid("000102030405060708090a0b0c0d0e"), "pairings[0].eid.identityKey must be 32 hex digits"),
      (eid("zz0102030405060708090a0b0c0d0e0f"), "pairings[0].eid.identityKey must be 32 hex digits"),
      (eid(k: 16), "pairings[0].eid.rotationExponent must be a whole number from 0 to 15"),
      (eid(clock: 4_294_967_296), "pairings[0].eid.beaconClock must be a whole number from 0 to 4294967295"),
      (eid(device: "A\\nB"), "pairings[0]: "),
      (#"{"irk":"\#(irk)","eid":{},"deviceId":"A"}"#, "pairings[0] has both eid and irk"),
      (#"{"irk":"\#(irk)","uuid":"\#(uuid)","deviceId":"A"}"#, "pairings[0] has an unknown key \"uuid\""),
      (#"{"irk":"\#(irk)"}"#, "pairings[0].deviceId must be a string"),
      (eid() + "," + eid(clock: 7, device: "UNIT-E2"), "pairings[1] repeats the key of pairings[0]"),
    ] as [(String, String)])
  func aBadKeyPairingIsRefusedWithoutItsKey(pairings: String, reason: String) {
    guard case .failure(let refusal) = parse(#"{"version":2,"pairings":[\#(pairings)]}"#) else {
      Issue.record("accepted: \(pairings)")
      return
    }
    #expect(refusal.version == 2)
    #expect(refusal.reason.contains(reason), "\(refusal.reason)")
    for key in [Self.eidKey, Self.irk, "000102030405060708090a0b0c0d0e", "zz0102030405060708090a0b0c0d0e0f"] {
      #expect(!refusal.reason.lowercased().contains(key.lowercased()), "\(refusal.reason)")
    }
  }

  /// The same key as an EID and as an IRK is two pairings: one scheme each.
  @Test func oneKeyInTwoSchemesIsTwoPairings() throws {
    let text =
      #"{"version":2,"pairings":[\#(Self.eid()),{"irk":"\#(Self.eidKey)","deviceId":"UNIT-R1"}]}"#
    #expect(try parse(text).get().keyPairings.count == 2)
  }

  /// Numbers in the settings are checked and applied as they are written: never rounded to six
  /// decimals first (1.5e-6 was applied as 2e-06, 4e-7 as 0, and the default 1e-7 refused).
  @Test(arguments: [
    ("1.5e-6", 1.5e-6), ("4e-7", 4e-7), ("1e-7", 1e-7), ("1E-12", 1e-12), ("0.0000004", 4e-7),
    ("0.123456789", 0.123456789), ("5e-1", 0.5),
  ])
  func settingNumbersAreAppliedAsWritten(literal: String, value: Double) throws {
    let text = #"{"version":2,"settings":{"Presence":{"exitMissProbability":\#(literal)}}}"#
    let document = try parse(text).get()
    #expect(
      document.settings == [FleetSetting(section: "Presence", key: "exitMissProbability", value: literal)])
    let applied = DaemonSettings.bridge(file: DaemonConfiguration(), remote: document.settings)
    #expect(applied.presence.exitMissProbability == value)
  }

  /// Below the range is refused with the number as written, not as a rounded 0.
  @Test func aSettingNumberBelowItsRangeIsQuotedAsWritten() {
    let text = #"{"version":2,"settings":{"Presence":{"exitMissProbability":4e-13}}}"#
    guard case .failure(let refusal) = parse(text) else {
      Issue.record("accepted 4e-13")
      return
    }
    #expect(refusal.reason.contains("exitMissProbability \"4e-13\" is out of range"), "\(refusal.reason)")
  }

  /// The reasons for what cannot be read are each their own, and true.
  @Test func unreadableDocumentsSayWhy() {
    func reason(_ text: String) -> String {
      if case .failure(let refusal) = parse(text) { return refusal.reason }
      return "accepted"
    }
    let reasons = [
      "{", String(repeating: "[", count: 600) + String(repeating: "]", count: 600), #"{"version":1e400}"#,
      #"{"version":1e19}"#,
    ].map(reason)
    #expect(Set(reasons).count == 4, "\(reasons)")
    #expect(!reasons.contains("accepted"))
    #expect(!reasons.contains { $0.contains("not a JSON object") }, "\(reasons)")
  }

  /// Key material (eid, irk) only over TLS; a misspelt field is refused as unknown whatever the
  /// connection, never taken for key material nor left out.
  @Test func keysAreRefusedWithoutTLS() {
    let text =
      #"{"version":2,"pairings":[{"uuid":"\#(Self.uuid)","deviceId":"A"},{"uuid":"\#(Self.uuid)","major":2,"deviceId":"B","irk":"00112233445566778899aabbccddeeff"}]}"#
    guard case .failure(let refusal) = FleetDocument.parse(Array(text.utf8), overTLS: false) else {
      Issue.record("keys accepted without TLS")
      return
    }
    #expect(
      refusal.reason.hasPrefix("pairings[1] carries \"irk\": keys are refused over a connection without TLS"))
    let plain = #"{"version":2,"pairings":[{"uuid":"\#(Self.uuid)","deviceId":"A","label":"x"}]}"#
    #expect((try? FleetDocument.parse(Array(plain.utf8), overTLS: false).get())?.pairings.count == 1)
    let typo = #"{"version":2,"pairings":[{"uuid":"\#(Self.uuid)","major":1,"mnior":7,"deviceId":"A"}]}"#
    for overTLS in [false, true] {
      guard case .failure(let refusal) = FleetDocument.parse(Array(typo.utf8), overTLS: overTLS) else {
        Issue.record("a misspelt minor was taken (overTLS: \(overTLS))")
        continue
      }
      #expect(refusal.reason.hasPrefix("pairings[0] has an unknown key \"mnior\""), "\(refusal.reason)")
    }
  }

  /// The reported documents, byte for byte as docs/fleet.md shows them.
  @Test func theReportedDocuments() {
    #expect(String(decoding: FleetReport.applied(3), as: UTF8.self) == #"{"state":"applied","version":3}"#)
    #expect(
      String(decoding: FleetReport.pending(4), as: UTF8.self)
        == #"{"reason":"a trip is in progress","state":"pending","version":4}"#)
    #expect(
      String(decoding: FleetReport.refused(FleetRefusal(version: nil, "x")), as: UTF8.self)
        == #"{"reason":"x","state":"refused","version":null}"#)
  }

  /// Hostile bytes: never a crash, always a refusal or a document, in bounded time.
  @Test func randomBytesAreRefusedNotTrusted() {
    var generator = SystemRandomNumberGenerator()
    let start = ContinuousClock.now
    for _ in 0..<2000 {
      let count = Int.random(in: 0..<64, using: &generator)
      let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
      if case .success(let document) = FleetDocument.parse(bytes) { #expect(document.version > 0) }
    }
    #expect(ContinuousClock.now - start < .seconds(20))
  }

  /// The settings are checked over the configuration file's values, the rules across keys on the
  /// result: what the daemon would run, not the defaults.
  @Test func theSettingsAreCheckedOverTheFile() throws {
    func check(_ file: String, _ settings: String) throws -> String? {
      let config = try DaemonConfiguration.parse("[General]\nbackend = hci\n" + file, file: "f.conf")
      let text = #"{"version":2,"settings":\#(settings)}"#
      switch FleetDocument.parse(Array(text.utf8), file: config) {
      case .success(let document):
        #expect(DaemonSettings.bridge(file: config, remote: document.settings).problems() == [])
        return nil
      case .failure(let refusal): return refusal.reason
      }
    }
    let longer = #"{"Presence":{"exitTimeout":300}}"#
    // Above the default exitTimeoutMax (60), below the file's.
    #expect(try check("[Presence]\nexitTimeoutMax = 600\n", longer) == nil)
    #expect(try check("", longer)?.contains("exitTimeoutMax must be at least exitTimeout") == true)
    #expect(
      try check("[Presence]\nexitTimeoutMax = 100\n", longer)?.hasPrefix("settings: exitTimeoutMax") == true)
    // The document's exitTimeoutMax below the file's exitTimeout.
    #expect(
      try check(
        "[Presence]\nexitTimeout = 200\nexitTimeoutMax = 300\n", #"{"Presence":{"exitTimeoutMax":100}}"#)?
        .contains("exitTimeoutMax must be at least exitTimeout") == true)
    #expect(
      try check(
        "[Presence]\nexitTimeout = 200\nexitTimeoutMax = 300\n", #"{"Presence":{"exitTimeoutMax":250}}"#)
        == nil)
    // BlueZ's floors (BackendDefaults) are part of what runs: exitTimeoutMax at least 90 there.
    let bluez = try DaemonConfiguration.parse("[Presence]\nexitTimeoutMax = 60\n", file: "f.conf")
    let text = #"{"version":2,"settings":{"Presence":{"exitTimeout":80}}}"#
    #expect((try? FleetDocument.parse(Array(text.utf8), file: bluez).get()) != nil)
  }

  /// One digest for one content, whatever the order of its lists; any change in what it says
  /// (a label, a key's clock, a setting) is another digest.
  @Test func theContentDigest() throws {
    func digest(_ pairings: [String], _ settings: String = "{}") throws -> String {
      try parse(#"{"version":2,"pairings":[\#(pairings.joined(separator: ","))],"settings":\#(settings)}"#)
        .get().contentDigest
    }
    let plain = #"{"uuid":"\#(Self.uuid)","major":1,"minor":7,"deviceId":"VAN-7"}"#
    let irk = #"{"irk":"\#(Self.irk)","deviceId":"UNIT-R1"}"#
    let base = try digest([plain, Self.eid(), irk], #"{"Presence":{"exitTimeout":45}}"#)
    #expect(try digest([irk, plain, Self.eid()], #"{"Presence":{"exitTimeout":45}}"#) == base)
    #expect(base.count == 64)
    #expect(!base.lowercased().contains(Self.eidKey))
    for changed in [
      try digest([plain, Self.eid(), irk]),
      try digest([plain, Self.eid(clock: 65281), irk], #"{"Presence":{"exitTimeout":45}}"#),
      try digest(
        [plain, Self.eid("000102030405060708090a0b0c0d0e1f"), irk], #"{"Presence":{"exitTimeout":45}}"#),
      try digest(
        [plain, Self.eid(), #"{"irk":"\#(Self.irk)","deviceId":"UNIT-R1","label":"x"}"#],
        #"{"Presence":{"exitTimeout":45}}"#),
      try digest([plain, Self.eid()], #"{"Presence":{"exitTimeout":45}}"#),
    ] {
      #expect(changed != base)
    }
  }

  /// The fleet's settings over the file's: a reload of the file keeps them; a new document
  /// replaces them whole.
  @Test func theSettingsOverlayTheFile() throws {
    // hci: no BlueZ floor under the presence timeouts (BackendDefaults).
    let file = try DaemonConfiguration.parse(
      "[General]\nbackend = hci\n[Presence]\nexitTimeout = 20\nexitTimeoutMax = 600\n", file: "f.conf")
    let settings = DaemonSettings(file)
    settings.setRemote([FleetSetting(section: "Presence", key: "exitTimeout", value: "75")])
    #expect(settings.current.bridge.value(of: "exitTimeout") == "75")
    #expect(settings.current.bridge.value(of: "exitTimeoutMax") == "600")
    #expect(settings.current.bridge.problems() == [])
    // A new file keeps the fleet's exitTimeout over its own; its exitTimeoutMax must allow it.
    let fitting = try DaemonConfiguration.parse(
      "[General]\nbackend = hci\n[Presence]\nexitTimeout = 30\nexitTimeoutMax = 300\n", file: "f.conf")
    #expect(DaemonSettings.bridge(file: fitting, remote: settings.remote).problems() == [])
    settings.update(fitting)
    #expect(settings.current.bridge.value(of: "exitTimeout") == "75")
    #expect(settings.current.bridge.problems() == [])
    settings.setRemote([])
    #expect(settings.current.bridge.value(of: "exitTimeout") == "30")
    // A file whose default exitTimeoutMax (60) is below the fleet's exitTimeout: what a SIGHUP
    // refuses (Daemon's reload).
    let unfit = try DaemonConfiguration.parse(
      "[General]\nbackend = hci\n[Presence]\nexitTimeout = 30\n", file: "f.conf")
    #expect(
      DaemonSettings.bridge(
        file: unfit, remote: [FleetSetting(section: "Presence", key: "exitTimeout", value: "75")]
      )
      .problems() == ["exitTimeoutMax must be at least exitTimeout"])
  }

  /// The list docs/fleet.md gives is the list the parser takes.
  @Test func theDocsListTheRemotelySettableKeys() throws {
    let docs = try String(
      contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/fleet.md").path, encoding: .utf8)
    for (section, key) in FleetDocument.remotelySettable {
      #expect(docs.contains("| `\(section)` | `\(key)` |"), "\(section).\(key) is not in docs/fleet.md")
    }
    #expect(!FleetDocument.remotelySettable.isEmpty)
  }
}
