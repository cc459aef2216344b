import BeaconCrypto

/// Searches for the EIDs the bridge did not find in its table (`KeyRing`), off the bridge's
/// executor, in slices of `slice` AES operations with a check for cancellation between them,
/// and at most `operationsPerSecond` on average: the work a flood of strangers' EIDs can cause
/// is bounded per second whatever the number of pairings or the tolerance, and neither the
/// D-Bus API nor a stop waits for it.
struct EIDSearchService: Service {
  let keys: KeyRing
  /// 200,000 AES operations a second: about a tenth of one core of a small ARM box.
  var operationsPerSecond = 200_000
  var slice = 2_000

  func run() async throws {
    let clock = ContinuousClock()
    // A token bucket of one second's operations.
    var tokens = Double(operationsPerSecond)
    var last = clock.now
    for await _ in keys.doorbell {
      while let (taken, queuedAt) = keys.nextSearch() {
        var search = taken
        while true {
          try Task.checkCancellation()
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
            try await Task.sleep(for: .seconds(-tokens / Double(operationsPerSecond)))
          } else {
            await Task.yield()
          }
        }
      }
    }
  }
}
