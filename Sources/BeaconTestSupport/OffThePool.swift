import Foundation
import Testing

/// Runs a suite's tests on threads of their own instead of the cooperative pool
/// (`@Suite(.offThePool)`): for suites whose synchronous tests compute for long.
///
/// Swift Testing runs every test on the cooperative pool, as wide as the machine has CPUs (two
/// on the build machine). A synchronous test that computes for a minute holds one of those
/// threads for that minute, and the async tests queued behind it miss their hang guards though
/// nothing hangs: under qemu, where such a test runs 10 to 20 times slower, two of them held
/// both threads for minutes. On threads of their own they share the CPUs with the rest through
/// the kernel's scheduler, as the daemon's own threads do.
public struct OffThePoolTrait: SuiteTrait, TestTrait, TestScoping {
  public var isRecursive: Bool { true }

  public func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    // Only the test cases themselves: a suite's scope is entered once, around all of them.
    guard testCase != nil else { return try await function() }
    try await withTaskExecutorPreference(OwnThreadExecutor.shared) { try await function() }
  }
}

extension Trait where Self == OffThePoolTrait {
  /// The tests run on threads of their own, not on the cooperative pool (`OffThePoolTrait`).
  public static var offThePool: Self { OffThePoolTrait() }
}

/// A task executor that runs each job on a new thread: nothing it runs waits for, or holds, a
/// thread of the cooperative pool.
final class OwnThreadExecutor: TaskExecutor, Sendable {
  static let shared = OwnThreadExecutor()

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedTaskExecutor()
    Thread { job.runSynchronously(on: executor) }.start()
  }
}
