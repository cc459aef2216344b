import BeaconCore
import HCIParsing
import Testing

@testable import HCI

@Suite struct ReportDecoderTests {
  static let uuid: [UInt8] = [
    0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
  ]

  static func iBeaconData(minor: UInt16) -> [UInt8] {
    [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + uuid + [0x00, 0x01, 0x00, UInt8(minor), 0xC5]
  }

  /// One legacy report from C0:FF:EE:00:00:0N (N = minor) at -61 dBm.
  static func iBeaconEvent(minor: UInt16, rssi: UInt8 = 0xC3) -> [UInt8] {
    let data = iBeaconData(minor: minor)
    let parameters: [UInt8] =
      [0x02, 0x01, 0x03, 0x00] + [UInt8(minor), 0x00, 0x00, 0xEE, 0xFF, 0xC0] + [UInt8(data.count)] + data + [
        rssi
      ]
    return [0x3E, UInt8(parameters.count)] + parameters
  }

  @Test func sightingsRejectionsAndSilence() {
    var decoder = ReportDecoder()
    let events = decoder.decode(Self.iBeaconEvent(minor: 7, rssi: 0x7F))
    guard case .sighting(let ad) = events.first else {
      Issue.record("no sighting: \(events)")
      return
    }
    #expect(ad.rssi == nil)
    #expect(BeaconFrameParser.parse(ad).frames.first?.beaconID?.identity?.minor == 7)
    // A malformed event is a rejection, not a crash.
    guard case .rejected(nil, let rejection) = decoder.decode([0x3E, 0x03, 0x02, 0x01, 0x00]).first else {
      Issue.record("no rejection")
      return
    }
    #expect(rejection.detail.contains("truncatedParameters"))
    // Damaged AD structures inside a well-formed report end the data (BlueZ eir_parse): a sighting
    // with the structures before the damage, none here, so no frames.
    let bad: [UInt8] = [0x3E, 0x0F, 0x02, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 0x03, 0x09, 0x01, 0x02, 0xC0]
    guard case .sighting(let damaged) = decoder.decode(bad).first else {
      Issue.record("no sighting")
      return
    }
    #expect(damaged.address.description == "06:05:04:03:02:01")
    #expect(BeaconFrameParser.parse(damaged).frames.isEmpty)
    #expect(decoder.decode([0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]).isEmpty)
  }

  /// Kernel `hci_le_adv_report_evt` (net/bluetooth/hci_event.c) takes each report before pulling
  /// the next: an event whose second report is cut short still delivers the first, then the
  /// damage is reported. Hand-built from the Core spec's layout (Vol 4, Part E, 7.7.65.2).
  @Test func secondReportCutShortStillDeliversTheFirst() {
    var decoder = ReportDecoder()
    let whole = Self.iBeaconEvent(minor: 7)
    // Two reports announced; the first whole, the second only its event type and address type.
    var parameters = Array(whole[2...])
    parameters[1] = 2
    parameters += [0x03, 0x00]
    let events = decoder.decode([0x3E, UInt8(parameters.count)] + parameters)
    guard events.count == 2, case .sighting(let ad) = events[0],
      case .rejected(nil, let rejection) = events[1]
    else {
      Issue.record("expected a sighting then a rejection: \(events)")
      return
    }
    #expect(BeaconFrameParser.parse(ad).frames.first?.beaconID?.identity?.minor == 7)
    #expect(rejection.detail.contains("report 2 of 2"))
  }
}
