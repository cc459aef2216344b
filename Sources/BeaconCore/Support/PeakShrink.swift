/// Notices that a large collection has shrunk for good: a flood of random addresses came and
/// went. Checked with the current count; says yes once the count has fallen to a quarter of its
/// peak since the last yes, for peaks above `threshold` only, so ordinary comings and goings never
/// trigger it. Both users act on it: the BlueZ device mirror copies itself into a smaller table
/// (a Swift dictionary keeps its capacity), and the daemon hands glibc's freed pages back.
public struct PeakShrink: Sendable {
  public var threshold = 1024
  public private(set) var peak = 0

  public init() {}

  public mutating func shouldRelease(tracked count: Int) -> Bool {
    peak = max(peak, count)
    guard peak > threshold, count <= peak / 4 else { return false }
    peak = count
    return true
  }
}
