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
      ("[]", nil, "not a JSON object"),
      ("{\"pairings\":[]}", nil, "version must be a whole number above 0"),
      ("{\"version\":0}", nil, "version must be a whole number above 0"),
      ("{\"version\":1.5}", nil, "version must be a whole number above 0"),
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
      ("{\"version\":2,\"settings\":{\"Presence\":{\"exitTimeout\":true}}}", 2, "must be a number"),
    ] as [(String, Int64?, String)])
  func aBadDocumentIsRefusedWithItsReason(text: String, version: Int64?, reason: String) {
    guard case .failure(let refusal) = parse(text) else {
      Issue.record("accepted: \(text)")
      return
    }
    #expect(refusal.version == version)
    #expect(refusal.reason.contains(reason), "\(refusal.reason)")
  }

  /// Key material (any pairing field beyond the plain five) only over TLS.
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
    settings.update(
      try DaemonConfiguration.parse(
        "[General]\nbackend = hci\n[Presence]\nexitTimeout = 30\n", file: "f.conf"))
    #expect(settings.current.bridge.value(of: "exitTimeout") == "75")
    settings.setRemote([])
    #expect(settings.current.bridge.value(of: "exitTimeout") == "30")
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
