import BeaconCore
import HCIParsing

/// A btmon capture turned into a `Scenario`, so `replay` plays it through the same
/// `ScenarioRunner` as `simulate`: each advertising report becomes a raw advertisement at its
/// capture time, in seconds from the capture's first record.
public struct CaptureReplay: Sendable {
  public let capture: BTSnoopCapture
  public let reports: CaptureReports

  /// Reads a capture. `controller` picks `hciN` in a monitor capture; nil takes the first
  /// controller that reports advertisements.
  /// Throws too for a record whose time is more than `Scenario.maximumSeconds` after the first
  /// record (an extreme timestamp): checked here, before any time becomes a clock's integer.
  public init(bytes: [UInt8], controller: UInt16? = nil) throws(BTSnoopError) {
    capture = try BTSnoopCapture(bytes: bytes)
    if let start = capture.records.first?.timestamp {
      let limit = UInt64(Scenario.maximumSeconds) * 1_000_000
      for (i, record) in capture.records.enumerated()
      where record.timestamp > start && record.timestamp - start > limit {
        throw BTSnoopError(
          .malformedRecord,
          "record \(i + 1): its timestamp is more than \(Int(Scenario.maximumSeconds)) s (about 31 years) after the first record's"
        )
      }
    }
    reports = CaptureReports(capture: capture, controller: controller)
  }

  /// Seconds from the first record to the last: the replay runs that long.
  public var duration: Double {
    guard let last = capture.records.map(\.timestamp).max() else { return 0 }
    return reports.seconds(last)
  }

  /// The scenario: one advertisement entry per report, with the given configuration and
  /// pairings. Reports keep their capture order; same-time reports keep their order in the file.
  public func scenario(configuration: BridgeConfiguration = BridgeConfiguration(), pairings: [Pairing] = [])
    -> Scenario
  {
    var scenario = Scenario()
    scenario.configuration = configuration
    scenario.pairings = pairings
    scenario.entries = reports.reports.compactMap { timed in
      guard let address = BluetoothAddress(bytes: timed.report.address.bytes) else { return nil }
      return Scenario.Entry(
        at: reports.seconds(timed.timestamp),
        action: .advertisement(address: address, rssi: timed.report.rssi, payload: .raw(timed.report.data)))
    }
    // Monitor timestamps come from the host clock and can step back; keep file order on ties.
    scenario.entries = scenario.entries.enumerated().sorted {
      ($0.element.at, $0.offset) < ($1.element.at, $1.offset)
    }
    .map(\.element)
    scenario.duration = duration
    return scenario
  }
}
