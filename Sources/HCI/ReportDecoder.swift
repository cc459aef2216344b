import BeaconCore
import HCIParsing

/// Turns HCI event packets into what an `AdvertisementSource` reports: a sighting per whole
/// advertisement (extended fragments reassembled), a rejection for a malformed event or
/// advertising data, nothing for directed reports and other events.
public struct ReportDecoder: Sendable {
  private var assembler = ExtendedReportAssembler()

  public init() {}

  public mutating func decode(_ packet: [UInt8]) -> [SourceEvent] {
    let event: HCIEvent
    do { event = try HCIEvent.parse(packet) } catch {
      // The reports whole before the damage still count, as in the kernel's
      // `hci_le_adv_report_evt`; then the damage is reported.
      return sourceEvents(error.deliveredReports)
        + [.rejected(address: nil, FrameRejection(.invalidEncoding, "HCI event: \(error.description)"))]
    }
    switch event {
    case .advertisingReports(let reports), .extendedAdvertisingReports(let reports):
      return sourceEvents(reports)
    default:
      return []
    }
  }

  private mutating func sourceEvents(_ reports: [AdvertisingReport]) -> [SourceEvent] {
    reports.flatMap { report in
      guard let whole = assembler.add(report) else { return [SourceEvent]() }
      return Self.sourceEvents(whole)
    }
  }

  /// The sighting, and a `rejected` event for a damaged tail (`Advertisement.sourceEvents`).
  static func sourceEvents(_ report: AdvertisingReport) -> [SourceEvent] {
    guard let address = BluetoothAddress(bytes: report.address.bytes) else { return [] }
    return Advertisement.sourceEvents(address: address, rssi: report.rssi, adStructures: report.data)
  }
}
