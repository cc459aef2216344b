/// Reassembles extended advertising data that a controller delivers in fragments.
///
/// A fragment with data status "incomplete, more to come" is held; the next fragments from the
/// same advertiser (address type, address, advertising set ID, and advertisement versus scan
/// response) are appended until one says "complete" or "incomplete, truncated", and the whole
/// is returned then, with the RSSI of the last fragment (as the kernel reports it). Memory is
/// bounded: at most `maximumPending` streams and `maximumLength` bytes each.
public struct ExtendedReportAssembler: Sendable {
  struct Key: Hashable, Sendable {
    var addressType: UInt8
    var address: DeviceAddress
    var sid: UInt8?
    var scanResponse: Bool
  }

  /// The longest advertising data a set carries (Core Specification Vol 6, Part B, 2.3.4.9:
  /// 1650 bytes).
  public static let maximumLength = 1650
  /// Advertisers whose fragments can be pending at once; the oldest is dropped beyond it.
  public static let maximumPending = 64

  private var pending: [Key: [UInt8]] = [:]
  private var order: [Key] = []
  /// Fragment streams dropped because too many were pending.
  public private(set) var evicted = 0

  public init() {}

  /// Streams still waiting for their last fragment.
  public var pendingCount: Int { pending.count }

  /// Adds one report. Returns the advertisement when it is whole (at once for a legacy or
  /// complete report), or nil while fragments are pending.
  public mutating func add(_ report: AdvertisingReport) -> AdvertisingReport? {
    guard report.format == .extended else { return report }
    let key = Key(
      addressType: report.addressType, address: report.address, sid: report.sid,
      scanResponse: report.isScanResponse)
    let held = pending[key]
    switch report.dataStatus {
    case .incompleteMoreToCome:
      var data = held ?? []
      data += report.data
      if data.count > Self.maximumLength {
        // Past the longest possible set: deliver what fits, flagged truncated.
        remove(key)
        var whole = report
        whole.data = Array(data.prefix(Self.maximumLength))
        whole.dataStatus = .incompleteTruncated
        return whole
      }
      if held == nil {
        order.append(key)
        if order.count > Self.maximumPending {
          pending[order.removeFirst()] = nil
          evicted += 1
        }
      }
      pending[key] = data
      return nil
    case .complete, .incompleteTruncated:
      guard let held else { return report }
      remove(key)
      var whole = report
      let data = held + report.data
      whole.data = Array(data.prefix(Self.maximumLength))
      if data.count > Self.maximumLength { whole.dataStatus = .incompleteTruncated }
      return whole
    }
  }

  private mutating func remove(_ key: Key) {
    pending[key] = nil
    order.removeAll { $0 == key }
  }
}
