import BeaconCore

extension Daemon {
  /// After the services stopped: why, STOPPING=1, the radio put back (StopDiscovery, or the
  /// controller's scan state) and the EID beacons' clocks kept. The exit status: 0 after a
  /// signal, 1 when a service stopped on its own.
  func stop(
    after reason: ServiceGroup.Stop, scanStatus: ScanStatus, book: PairingBook,
    logger: DaemonLogger, notifier: SystemdNotifier
  ) async -> Int32 {
    var outcome: Int32 = 0
    switch reason {
    case .signal(let number):
      logger.log(.notice, "stopping (signal \(number))")
      notifier.notify("STOPPING=1")
    case .serviceEnded(let name, let error):
      logger.log(.error, "\(name) stopped\(error.map { ": \($0)" } ?? ""); stopping")
      notifier.notify("STOPPING=1")
      outcome = 1
    }
    // Put the radio back before exiting.
    if let source = scanStatus.source { await source.finished(within: Self.stopBudget.radio) }
    // The EID beacons' clocks as last heard, so the next start resumes them and refuses a replay.
    do throws(StoreError) { try await book.saveTracking() } catch {
      logger.log(.warning, "cannot keep the EID beacons' clocks: \(error.description)")
    }
    logger.log(.info, "stopped")
    return outcome
  }
}
