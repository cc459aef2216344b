import Synchronization

/// A count that one thread adds to and any other reads (a status report, a test): what a reader
/// thread dropped or refused, say.
public final class EventCount: Sendable {
  private let value = Atomic<Int>(0)

  public init() {}

  public func add(_ count: Int = 1) { value.add(count, ordering: .relaxed) }

  public var count: Int { value.load(ordering: .relaxed) }
}
