import BeaconCore

/// Pairings written by `beaconbridge pair` without the daemon (straight into the store) are
/// picked up from SQLite's `data_version`, checked when a file in the state directory changes
/// (inotify) and at most once per `interval`. Where inotify cannot watch the directory, it checks
/// every `interval` instead (and says so).
struct PairingWatcher: Service {
  let book: PairingBook
  let logger: DaemonLogger
  var store: Store { book.store }
  var interval: Duration = .seconds(2)

  func run() async throws {
    var version = try? await store.dataVersion()
    let changed = Doorbell()
    let directory = StateDirectory.parent(of: store.path)
    var watch: DirectoryWatch?
    switch DirectoryWatch.start(directory, prefix: Store.fileName, ringing: changed) {
    case .success(let started): watch = started
    case .failure(let error):
      logger.log(
        .warning, "cannot watch \(directory) (\(error)); checking for new pairings every \(interval)")
    }
    defer { watch?.stop() }
    while true {
      if watch != nil { await changed.wait() }
      // Coalesces a burst of writes (the daemon's own, during a trip) into one check.
      try await Task.sleep(for: interval)
      guard let now = try? await store.dataVersion(), now != version else { continue }
      version = now
      if let pairings = try? await store.pairings(), pairings != (await book.bridge.status.pairings) {
        do {
          try await book.refresh()
          logger.log(.notice, "pairings changed: \(pairings.count) pairing(s)")
        } catch {
          logger.log(.error, "cannot read the pairings: \(error.description)")
        }
      }
    }
  }
}
