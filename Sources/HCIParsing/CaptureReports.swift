/// The advertising reports in a capture, from the one controller that was scanning.
///
/// A monitor capture (`btmon -w`) holds every controller on the host. Only one controller's
/// events are used: the one asked for, or else the first controller whose events carry LE
/// advertising reports. Extended reports are reassembled from their fragments per advertiser.
public struct CaptureReports: Sendable {
  public struct Timed: Hashable, Sendable {
    /// Microseconds since 0 AD, from the record of the report (the last fragment's record).
    public var timestamp: UInt64
    public var report: AdvertisingReport

    public init(timestamp: UInt64, report: AdvertisingReport) {
      self.timestamp = timestamp
      self.report = report
    }
  }

  /// An event that could not be decoded, with its record number (from 0).
  public struct Malformed: Hashable, Sendable {
    public var record: Int
    public var error: HCIEventError
  }

  /// The controller used (nil for an H4 capture, or when no controller reported anything).
  public var controller: UInt16?
  /// Controllers whose events carry advertising reports, in order of first appearance.
  public var scanningControllers: [UInt16]
  /// Whole advertisements, in capture order.
  public var reports: [Timed]
  /// Events of the chosen controller that did not decode.
  public var malformed: [Malformed]
  /// Directed advertising reports seen (and ignored: they carry no advertising data).
  public var directedReports: Int
  /// Extended advertisements still waiting for fragments when the capture ended.
  public var unfinishedFragments: Int
  /// The capture's first record time (microseconds since 0 AD), the origin of replay time.
  public var start: UInt64?

  /// Collects the reports. `controller` picks `hciN` in a monitor capture; nil picks the first
  /// controller that reports advertisements.
  public init(capture: BTSnoopCapture, controller requested: UInt16? = nil) {
    let packets = capture.packets
    start = capture.records.first?.timestamp
    var scanning: [UInt16] = []
    var decoded: [(packet: CapturedPacket, event: Result<HCIEvent, HCIEventError>)] = []
    for packet in packets where packet.kind == .event {
      let event: Result<HCIEvent, HCIEventError>
      do { event = .success(try HCIEvent.parse(packet.data)) } catch { event = .failure(error) }
      decoded.append((packet, event))
      guard let index = packet.index, !scanning.contains(index) else { continue }
      switch event {
      case .success(.advertisingReports), .success(.extendedAdvertisingReports): scanning.append(index)
      case .failure(let error) where !error.deliveredReports.isEmpty: scanning.append(index)
      default: break
      }
    }
    scanningControllers = scanning
    let chosen = capture.datalink == .monitor ? (requested ?? scanning.first) : nil
    controller = chosen
    reports = []
    malformed = []
    directedReports = 0
    var assembler = ExtendedReportAssembler()
    for (packet, event) in decoded where packet.index == chosen {
      switch event {
      case .failure(let error):
        // The reports whole before the damage are kept (kernel `hci_le_adv_report_evt`).
        for report in error.deliveredReports {
          if let whole = assembler.add(report) {
            reports.append(Timed(timestamp: packet.timestamp, report: whole))
          }
        }
        malformed.append(Malformed(record: packet.record, error: error))
      case .success(.advertisingReports(let list)), .success(.extendedAdvertisingReports(let list)):
        for report in list {
          if let whole = assembler.add(report) {
            reports.append(Timed(timestamp: packet.timestamp, report: whole))
          }
        }
      case .success(.directedAdvertisingReports(let count)):
        directedReports += count
      case .success:
        break
      }
    }
    unfinishedFragments = assembler.pendingCount
  }

  /// Seconds from the capture's first record to `timestamp`.
  public func seconds(_ timestamp: UInt64) -> Double {
    guard let start, timestamp >= start else { return 0 }
    return Double(timestamp - start) / 1_000_000
  }
}
