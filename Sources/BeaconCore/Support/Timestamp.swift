/// A point on the bridge's monotonic timeline, in seconds since the bridge's origin.
///
/// The core never reads a wall clock: every state machine takes a `Timestamp` from its caller.
/// The façade turns an injected `Clock<Duration>` into timestamps, `simulate` uses scenario
/// seconds, and `replay` uses capture timestamps.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var seconds: Double

  public init(seconds: Double) { self.seconds = seconds }

  public static let zero = Timestamp(seconds: 0)

  public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.seconds < rhs.seconds }

  public static func + (lhs: Timestamp, rhs: Double) -> Timestamp {
    Timestamp(seconds: lhs.seconds + rhs)
  }

  public static func - (lhs: Timestamp, rhs: Timestamp) -> Double { lhs.seconds - rhs.seconds }

  public var description: String { "t=\(seconds)s" }
}
