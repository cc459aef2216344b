import BeaconCore
import Foundation
import HCIParsing
import Testing

@testable import HCI

/// A real capture from the VM tier (Tests/VM, `make test-vm`): `btmon -i 0 -w` while hci0 scanned
/// through bluetoothd (BlueZ 5.66, Linux 6.1) and two btvirt controllers advertised iBeacons with
/// `btmgmt add-adv`. Extended advertising reports, RSSI 127 (invalid), one report per beacon.
@Suite struct VMCaptureTests {
  static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures/vm-ibeacons.btsnoop")

  /// The two beacons the VM advertised, with their UUIDs as transmitted (big-endian).
  static let beaconA = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"
  static let beaconB = "74278BDA-B644-4520-8F0C-720EAF059935"

  func replay() throws -> CaptureReplay {
    try CaptureReplay(bytes: [UInt8](try Data(contentsOf: Self.fixture)))
  }

  @Test func theCaptureHoldsTwoExtendedReportsFromHci0() throws {
    let replay = try replay()
    #expect(replay.capture.datalink == .monitor)
    #expect(replay.reports.controller == 0)
    #expect(replay.reports.malformed.isEmpty)
    #expect(replay.reports.reports.count == 2)
    for timed in replay.reports.reports {
      // btvirt reports no RSSI (127): it must come through as unknown, not as +127 dBm.
      #expect(timed.report.rssi == nil)
    }
  }

  /// btmon prints these UUIDs byte-reversed (it decodes them as little-endian UUID128s); the
  /// bytes on air are big-endian, as CoreLocation and BlueZ's ManufacturerData read them.
  @Test func theUUIDBytesAreBigEndianOnAir() throws {
    let payloads = try replay().reports.reports.map { Hex.encode($0.report.data).lowercased() }
    #expect(payloads.contains { $0.contains("4c000215e2c56db5dffb48d2b060d0f5a71096e000010007") })
    #expect(payloads.contains { $0.contains("4c00021574278bdab64445208f0c720eaf05993500020009") })
  }

  @Test func replayFindsBothBeaconsWithTheirIdentities() async throws {
    let lines = Lines()
    try await ScenarioRunner(scenario: try replay().scenario()).run(emit: { lines.add($0.jsonLine) })
    var entered: [String] = []
    for line in lines.all {
      guard case .object(let fields)? = try? JSONValue.parse(Data(line.utf8)),
        fields["type"] == .string("beaconEntered"), let uuid = fields["uuid"]?.stringValue,
        let major = fields["major"]?.intValue, let minor = fields["minor"]?.intValue
      else { continue }
      entered.append("\(uuid) \(major)/\(minor)")
    }
    #expect(entered.sorted() == ["\(Self.beaconB) 2/9", "\(Self.beaconA) 1/7"].sorted())
  }
}
