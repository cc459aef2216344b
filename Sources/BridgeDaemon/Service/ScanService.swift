import BeaconCore
import BlueZ
import Synchronization

/// What the daemon's scanning is doing, for `STATUS=`, `status` and `doctor`.
public enum ScanCondition: Sendable, Hashable {
  /// No source has been started yet.
  case starting
  /// Advertisements can arrive through this backend.
  case scanning(backend: String)
  /// The source runs but waits for something outside it: an adapter, power, bluetoothd.
  case waiting(backend: String, reason: ScanWait)
  /// The source cannot run; it is tried again after the backoff.
  case failing(reason: String, retryInSeconds: Int)

  /// The backend that scans now, if any.
  public var scanningBackend: String? {
    if case .scanning(let backend) = self { return backend }
    return nil
  }

  /// For `STATUS=` and the journal.
  public var summary: String {
    switch self {
    case .starting: "starting"
    case .scanning(let backend): "scanning (\(backend))"
    case .waiting(_, let reason): "not scanning: \(reason)"
    case .failing(let reason, let retry): "not scanning: \(reason); retrying in \(retry) s"
    }
  }

}

/// Keeps one advertisement source feeding the bridge: starts it, restarts it when it ends or
/// fails, and reports what it is doing.
///
/// The backoff (1 s doubling to 30 s) is reset only by a scan that ran for `healthyRun`. A source
/// that fails as it starts and one that fails a moment after handing over its stream (the HCI
/// source reports a refused command through its stream) are backed off alike, so a scan that
/// cannot work never logs once a second.
struct ScanService<C: Clock>: Service where C.Duration == Duration {
  /// Makes a source; it calls the given closure with what it waits for, or nil once it scans.
  var makeSource: @Sendable (_ onWaiting: @escaping @Sendable (ScanWait?) -> Void) -> any AdvertisementSource
  /// Starts a source and feeds it to the bridge until it ends, calling the given closure once it
  /// runs (`BeaconBridge.consume(source:started:)`).
  var consume:
    @Sendable (any AdvertisementSource, _ started: @escaping @Sendable () -> Void) async throws -> Void
  var report: @Sendable (ScanCondition) -> Void
  var log: @Sendable (LogRecord.Level, String) -> Void
  var explain: @Sendable (any Error) -> String
  var clock: C
  var initialDelay: Duration = .seconds(1)
  var maximumDelay: Duration = .seconds(30)
  var healthyRun: Duration = .seconds(60)
  /// Told of each source as it is made, so that its cleanup can be awaited at exit.
  var started: @Sendable (any AdvertisementSource) -> Void = { _ in }

  /// Runs until cancelled.
  func run() async {
    var delay = initialDelay
    let announced = Atomic<Bool>(false)
    while !Task.isCancelled {
      let attempt = Attempt()
      let source = makeSource { reason in attempt.waiting(reason, report: report) }
      started(source)
      let begun = clock.now
      var failure: (any Error)?
      do {
        try await consume(source) { [report, log] in
          attempt.begin(backend: source.description, report: report)
          let again = announced.exchange(true, ordering: .relaxed)
          log(
            .notice,
            again ? "scanning again with \(source.description)" : "scanning with \(source.description)")
        }
      } catch {
        failure = error
      }
      if Task.isCancelled || failure is CancellationError { return }
      if begun.duration(to: clock.now) >= healthyRun { delay = initialDelay }
      if let failure {
        let reason = explain(failure)
        log(.warning, "cannot scan: \(reason); retrying in \(delay.wholeSeconds) s")
        report(.failing(reason: reason, retryInSeconds: delay.wholeSeconds))
      } else {
        log(.warning, "the scan with \(source.description) ended; restarting it in \(delay.wholeSeconds) s")
        report(.failing(reason: "the scan ended", retryInSeconds: delay.wholeSeconds))
      }
      do { try await clock.sleep(for: delay) } catch { return }
      delay = min(delay * 2, maximumDelay)
    }
  }

  /// One source's life: what it waits for, and whether its stream has been handed over.
  private final class Attempt: Sendable {
    private struct State {
      var backend: String?
      var waiting: ScanWait?
    }
    private let state = Mutex(State())

    func waiting(_ reason: ScanWait?, report: (ScanCondition) -> Void) {
      let condition = state.withLock { s -> ScanCondition? in
        s.waiting = reason
        return s.backend.map { Self.condition(backend: $0, waiting: reason) }
      }
      if let condition { report(condition) }
    }

    func begin(backend: String, report: (ScanCondition) -> Void) {
      let waiting = state.withLock { s in
        s.backend = backend
        return s.waiting
      }
      report(Self.condition(backend: backend, waiting: waiting))
    }

    private static func condition(backend: String, waiting: ScanWait?) -> ScanCondition {
      waiting.map { .waiting(backend: backend, reason: $0) } ?? .scanning(backend: backend)
    }
  }
}

extension ScanService where C == ContinuousClock {
  /// The daemon's scan: the configured backend's source, made from the settings in force at each
  /// (re)start and waiting for bluetoothd and an adapter; what it does kept in `status`, each
  /// change rung on `changed` (`STATUS=`).
  static func daemon(
    settings: DaemonSettings, paired: PairedBeacons, bridge: BeaconBridge, status: ScanStatus,
    changed: Doorbell, logger: DaemonLogger
  ) -> Self {
    var scan = ScanService(
      makeSource: { onWaiting in
        let config = settings.current.daemon
        return config.backend.makeSource(
          adapter: config.adapter, keep: { paired.contains($0) }, waitForHardware: true, onWaiting: onWaiting
        ) { logger.log(.info, $0) }
      },
      consume: { try await bridge.consume(source: $0, started: $1) },
      report: { condition in
        status.set(condition)
        changed.ring()
      },
      log: { logger.log($0, $1) },
      explain: { ScanAdvice.explain($0, for: .service) },
      clock: ContinuousClock())
    scan.started = { status.started($0) }
    return scan
  }
}

extension Duration {
  /// Whole seconds, for messages.
  var wholeSeconds: Int { Int(components.seconds) }
}
