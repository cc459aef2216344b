import BeaconTestSupport
import Synchronization
import Testing

@testable import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The daemon's service group: signals become reloads or a graceful stop, and the first service
/// to stop on its own stops the rest.
@Suite struct ServiceGroupTests {
  /// Runs until cancelled, counting how it ended.
  final class Forever: Service {
    let cancelled = Atomic<Int>(0)
    func run() async throws {
      do { try await Task.sleep(for: .seconds(3600)) } catch {
        cancelled.add(1, ordering: .relaxed)
        throw error
      }
    }
  }

  struct Broken: Service, Error {
    func run() async throws { throw self }
  }

  @Test func sigtermStopsEveryServiceAndSighupReloads() async throws {
    let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
    let reloads = Atomic<Int>(0)
    let services = [Forever(), Forever()]
    let group = ServiceGroup(services: services, signals: signals) { reloads.add(1, ordering: .relaxed) }
    async let stopped = group.run()
    continuation.yield(SIGHUP)
    try await waitUntil("the first reload") { reloads.load(ordering: .relaxed) == 1 }
    continuation.yield(SIGHUP)
    try await waitUntil("the second reload") { reloads.load(ordering: .relaxed) == 2 }
    continuation.yield(SIGTERM)
    guard case .signal(let number) = await stopped else {
      Issue.record("the group did not stop on the signal")
      return
    }
    #expect(number == SIGTERM)
    #expect(reloads.load(ordering: .relaxed) == 2)
    // `run` returned, so every service has stopped, each through cancellation.
    #expect(services.map { $0.cancelled.load(ordering: .relaxed) } == [1, 1])
  }

  /// A reload that does not end (a configuration read that blocks, a child that hangs) does not
  /// hold SIGTERM: the signal loop never waits for a reload.
  @Test(.timeLimit(.minutes(1))) func aReloadInProgressDoesNotHoldSigterm() async throws {
    let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
    let started = Atomic<Int>(0)
    let group = ServiceGroup(services: [Forever()], signals: signals) {
      started.add(1, ordering: .relaxed)
      try? await Task.sleep(for: .seconds(3600))
    }
    async let stopped = group.run()
    continuation.yield(SIGHUP)
    try await waitUntil("the reload started") { started.load(ordering: .relaxed) == 1 }
    continuation.yield(SIGTERM)
    guard case .signal(let number) = await stopped else {
      Issue.record("the group did not stop on the signal")
      return
    }
    #expect(number == SIGTERM)
  }

  @Test func aFailingServiceStopsTheRest() async {
    let (signals, _) = AsyncStream.makeStream(of: Int32.self)
    let other = Forever()
    let group = ServiceGroup(services: [other, Broken()], signals: signals) {}
    guard case .serviceEnded(let name, let error) = await group.run() else {
      Issue.record("the group did not stop on the failure")
      return
    }
    #expect(name == "Broken")
    #expect(error is Broken)
    #expect(other.cancelled.load(ordering: .relaxed) == 1)
  }

  /// Ignores cancellation: a post that waits for a backend, a radio that does not answer.
  struct Stubborn: Service {
    func run() async throws {
      await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
    }
  }

  /// A service that does not stop is left behind once the stop budget is spent: the group
  /// returns, names it, and the `stopping` hook ran first.
  @Test(.timeLimit(.minutes(1))) func aServiceThatDoesNotStopIsLeftBehindAfterTheBudget() async {
    let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
    let stopping = Atomic<Int>(0)
    let other = Forever()
    let group = ServiceGroup(
      services: [other, Stubborn()], signals: signals, stopBudget: .milliseconds(300),
      stopping: { stopping.add(1, ordering: .relaxed) }, reload: {})
    continuation.yield(SIGTERM)
    let started = ContinuousClock.now
    let (stop, left) = await group.runReporting()
    let took = ContinuousClock.now - started
    guard case .signal(SIGTERM) = stop else {
      Issue.record("the group did not stop on the signal")
      return
    }
    #expect(left == ["Stubborn"])
    #expect(stopping.load(ordering: .relaxed) == 1)
    #expect(other.cancelled.load(ordering: .relaxed) == 1)
    // It waited out the budget for the stubborn one (and returned at all: it never ends).
    #expect(took >= .milliseconds(300), "\(took)")
  }
}
