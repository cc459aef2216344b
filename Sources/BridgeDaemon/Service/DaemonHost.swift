import BeaconCore
import Synchronization

/// The configuration the running daemon uses, replaced on SIGHUP.
final class DaemonSettings: Sendable {
  /// The file's configuration, and the fleet's settings over it (`FleetDocument`, checked
  /// whole before they get here).
  private let value: Mutex<(file: DaemonConfiguration, remote: [FleetSetting])>
  init(_ config: DaemonConfiguration) { value = Mutex((config, [])) }
  /// The file's configuration, for the parts the fleet does not set (the scan's backend, the
  /// upload's sink, G-Zone), and the bridge configuration the daemon runs (`bridge(file:remote:)`):
  /// `daemon.bridge` is the file's alone, and only `bridge` carries the fleet's settings.
  var current: (daemon: DaemonConfiguration, bridge: BridgeConfiguration) {
    value.withLock { state in (state.file, Self.bridge(file: state.file, remote: state.remote)) }
  }
  /// The configuration file's values, without the fleet's.
  var file: DaemonConfiguration { value.withLock { $0.file } }
  /// The fleet's settings over the file.
  var remote: [FleetSetting] { value.withLock { $0.remote } }
  func update(_ config: DaemonConfiguration) { value.withLock { $0.file = config } }
  func setRemote(_ settings: [FleetSetting]) { value.withLock { $0.remote = settings } }

  /// The bridge configuration the daemon runs for a file and the fleet's settings over it, with
  /// the backend's floors (`BackendDefaults`): what a reload checks, and so what a desired
  /// document and a changed file are checked against.
  static func bridge(file: DaemonConfiguration, remote: [FleetSetting]) -> BridgeConfiguration {
    var bridge = file.bridge
    for setting in remote { try? bridge.set(setting.key, to: setting.value) }
    file.backend.apply(to: &bridge)
    return bridge
  }
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
