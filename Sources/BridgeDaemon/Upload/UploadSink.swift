import BeaconCore
import FoundationEssentials
import Synchronization

/// Where tagged batches go: the backend behind the `[Upload] URL` (docs/upload.md).
///
/// `post` returns on delivery and throws `RetryablePostFailure` (the batch stays in the outbox
/// and the bridge retries it with backoff) or `PermanentPostFailure` (the bridge dead-letters
/// it). Every post goes through the bridge's queue, dead-letter retries too, so a sink sees one
/// caller and needs no queue of its own.
public protocol UploadSink: Sendable {
  func post(_ batch: TaggedTripBatch) async throws
  /// Releases what the sink holds (a connection, a thread). Called when the sink is replaced.
  func stop()
}

extension UploadSink {
  public func stop() {}
}

/// The sink the configuration names, kept until the configuration changes it: built on the
/// first post, and rebuilt (the old one stopped) after a SIGHUP that changed the `[Upload]` or
/// `[MQTT]` settings. An unchanged reload keeps the sink and its connection.
public final class UploadSinks: Sendable {
  /// What a sink is built from: the parts of the configuration a sink reads.
  struct Plan: Equatable {
    var url: String?
    var mqtt: MQTTSettings?
    var tokenFile: String?
    var timeout: Double
    var tls: TLSFiles

    init(_ config: DaemonConfiguration) {
      url = config.uploadURL
      mqtt = config.mqttSettings
      tokenFile = config.tokenFile
      timeout = config.uploadTimeout
      tls = config.uploadTLS
    }
  }

  private let state = Mutex<(plan: Plan?, sink: (any UploadSink)?)>((nil, nil))
  /// Set by `stop`: no post starts after it (the daemon stops within its budget).
  private let stopped = Atomic<Bool>(false)

  public init() {}

  /// The sink for `config`: an `mqtt://`/`mqtts://` URL gives the MQTT sink, an `http(s)://`
  /// one the HTTP sink; none (nil) when no URL is configured.
  static func make(_ plan: Plan) -> (any UploadSink)? {
    if let mqtt = plan.mqtt { return MQTTSink(mqtt) }
    guard let text = plan.url, let url = URL(string: text) else { return nil }
    return HTTPUploader(url: url, tokenFile: plan.tokenFile, timeout: plan.timeout, tls: plan.tls)
  }

  /// The current sink for `config`, rebuilt when its settings changed.
  public func sink(for config: DaemonConfiguration) -> (any UploadSink)? {
    let plan = Plan(config)
    let (sink, replaced) = state.withLock { state -> ((any UploadSink)?, (any UploadSink)?) in
      if state.plan == plan { return (state.sink, nil) }
      let old = state.sink
      state = (plan, Self.make(plan))
      return (state.sink, old)
    }
    replaced?.stop()
    return sink
  }

  /// Posts through the sink `config` names; with no `[Upload] URL` the batch waits.
  public func post(_ batch: TaggedTripBatch, config: DaemonConfiguration) async throws {
    guard !stopped.load(ordering: .acquiring) else {
      throw RetryablePostFailure("not sent: the daemon is stopping; the batch stays in the outbox")
    }
    guard let sink = sink(for: config) else {
      throw RetryablePostFailure("no [Upload] URL is configured; the batch waits in the outbox")
    }
    try await sink.post(batch)
  }

  /// Stops the current sink (the daemon's exit): a post in flight is abandoned where the sink
  /// can (MQTT), and no post starts after.
  public func stop() {
    stopped.store(true, ordering: .releasing)
    let sink = state.withLock { state in
      defer { state = (nil, nil) }
      return state.sink
    }
    sink?.stop()
  }
}
