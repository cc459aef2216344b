import BeaconCore
import Synchronization

/// The configuration the running daemon uses, replaced on SIGHUP.
final class DaemonSettings: Sendable {
  private let value: Mutex<DaemonConfiguration>
  init(_ config: DaemonConfiguration) { value = Mutex(config) }
  var current: (daemon: DaemonConfiguration, bridge: BridgeConfiguration) {
    value.withLock { config in
      var bridge = config.bridge
      config.backend.apply(to: &bridge)
      return (config, bridge)
    }
  }
  func update(_ config: DaemonConfiguration) { value.withLock { $0 = config } }
}

/// The daemon's ScopeHost: beacon mode, logs to the journal, uploads through the sink the
/// configuration names (`UploadSinks`).
struct DaemonHost: ScopeHost {
  let settings: DaemonSettings
  let uploads: UploadSinks
  let logger: DaemonLogger

  var configuration: BridgeConfiguration { settings.current.bridge }

  func log(_ record: LogRecord) { logger.log(record.level, record.message) }

  func onBeaconTripStart(_ trip: BeaconTripStart) async {
    await trip.snapshotActiveBeacon()
  }

  func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
    try await uploads.post(batch, config: settings.current.daemon)
  }
}
