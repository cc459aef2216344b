import DBus
import DBusTestSupport
import Testing

/// Starts one private dbus-daemon around a whole suite (Swift Testing `TestScoping`); tests read
/// it from `PrivateBusTrait.current`.
struct PrivateBusTrait: SuiteTrait, TestTrait, TestScoping {
  @TaskLocal static var current: PrivateBus?

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    try await PrivateBusTrait.$current.withValue(bus) { try await function() }
  }

  /// The suite's bus; fails the test if the trait is missing.
  static func bus() throws -> PrivateBus {
    try #require(current, "the suite needs the .privateBus trait")
  }
}

extension Trait where Self == PrivateBusTrait {
  static var privateBus: Self { Self() }
}

/// Collects signals from a subscription until `count` have arrived or `timeout` passes.
func collect(_ count: Int, from subscription: SignalSubscription, timeout: Duration = .seconds(10)) async
  -> [Signal]
{
  await withTaskGroup(of: [Signal]?.self) { group in
    group.addTask {
      var out: [Signal] = []
      for await batch in subscription.batches {
        out += batch
        if out.count >= count { break }
      }
      return out
    }
    group.addTask {
      try? await Task.sleep(for: timeout)
      return nil
    }
    let first = await group.next() ?? nil
    group.cancelAll()
    return first ?? []
  }
}
