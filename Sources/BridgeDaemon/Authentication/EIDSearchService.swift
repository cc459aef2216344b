import BeaconCrypto
import DBus
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Searches for the EIDs the bridge did not find in its table (`KeyRing`), off the bridge's
/// executor: on a thread of its own, at a lower scheduling priority (nice 10) than the daemon's
/// other threads, so a search never holds a thread of the Swift concurrency pool that the
/// bridge and the D-Bus API run on, and takes only the CPU they leave. It runs in slices of
/// `slice` AES operations, checks for a stop between them, and spends at most
/// `operationsPerSecond` on average: the work a flood of strangers' EIDs can cause is bounded
/// per second whatever the number of pairings or the tolerance, and neither the D-Bus API nor a
/// stop waits for it.
public struct EIDSearchService: Service {
  let keys: KeyRing
  /// 200,000 AES operations a second (`ColdSearchLimit.operationsPerSecond`, the budget the
  /// limit on a cold search is stated at): about a tenth of one core of a small ARM box.
  var operationsPerSecond = Int(ColdSearchLimit.operationsPerSecond)
  var slice = 2_000

  public init(keys: KeyRing) { self.keys = keys }

  final class Stop: Sendable {
    let flag = Atomic(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
  }

  public func run() async throws {
    let stop = Stop()
    let finished = Doorbell()
    let service = self
    OSThread.detach(name: "eid-search") {
      // On Linux the nice value is per thread, and who = 0 is the calling thread.
      _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
      service.searchLoop(stop)
      finished.ring()
    }
    await withTaskCancellationHandler {
      await finished.wait()
      // `wait` returns on cancellation too: the thread ends within a slice or a 100 ms pause.
      while !finished.isRung, !stop.isSet { await finished.wait() }
    } onCancel: {
      stop.flag.store(true, ordering: .releasing)
      keys.queued.signal()
    }
    try Task.checkCancellation()
  }

  /// The thread's loop: the next queued search, run in slices, paced with a token bucket of one
  /// second's operations.
  func searchLoop(_ stop: Stop) {
    let clock = ContinuousClock()
    var tokens = Double(operationsPerSecond)
    var last = clock.now
    while !stop.isSet {
      guard let (taken, queuedAt) = keys.nextSearch() else {
        // Woken by a queued EID or by the stop (`run`'s cancellation handler signals the same
        // semaphore, and a signal before the wait is kept): an idle box is never woken for it.
        keys.queued.wait()
        continue
      }
      var search = taken
      while !stop.isSet {
        let before = search.operations
        let progress = search.run(operations: slice)
        let now = clock.now
        let elapsed = now - last
        last = now
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        tokens = min(Double(operationsPerSecond), tokens + seconds * Double(operationsPerSecond))
        tokens -= Double(search.operations - before)
        if progress != .searching {
          keys.finish(search, progress, queuedAt: queuedAt)
          break
        }
        if tokens < 0 {
          // At most 100 ms at once, so a stop is seen.
          let wait = min(0.1, -tokens / Double(operationsPerSecond))
          usleep(UInt32(wait * 1_000_000))
        }
      }
    }
  }
}
