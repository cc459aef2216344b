import BeaconCore
import GZone

/// Why a poll did not happen or did not finish.
public enum GZonePollerError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No `[GZone]` URLs in the configuration.
  case notConfigured
  /// The load failed as a whole: nothing was diffed or stored.
  case load(GZoneError)
  case store(StoreError)

  public var description: String {
    switch self {
    case .notConfigured:
      "the daemon has no G-Zone configured: add a [GZone] section with the four URLs to its configuration file"
    case .load(let error): "G-Zone load failed: \(error.description)"
    case .store(let error): "G-Zone: \(error.description)"
    }
  }
}

/// Turns polling into events: loads the four payloads at the configured interval, a while after
/// each posted batch (`tripUploaded()`), and on demand (`refresh`); diffs each load against the
/// last one in the store, and hands each event to `emit` (the D-Bus signal) and `log` (the
/// journal).
///
/// The last load is stored *before* its events are emitted, so a restart never replays them
/// (a crash in between loses them instead). The very first load, with nothing stored, is the
/// baseline and makes no events. A failed load changes nothing. Refreshes never overlap: one
/// asked for while another runs shares its result.
public actor GZonePoller {
  public struct Refresh: Sendable {
    public var events: [GZoneEvent]
    /// The first load: nothing to diff against.
    public var baseline: Bool

    /// The D-Bus reply: `{"baseline": bool, "events": [{type, …}, …]}`.
    public var jsonText: String {
      "{\"baseline\":\(baseline),\"events\":[" + events.map(\.jsonText).joined(separator: ",") + "]}"
    }
  }

  public typealias Settings = @Sendable () -> (gzone: GZoneConfiguration, fallbackTokenFile: String?)

  let store: Store
  let settings: Settings
  let makeSource: @Sendable (GZoneConfiguration, String?) -> any GZoneSource
  let log: @Sendable (LogRecord.Level, String) -> Void
  let emit: @Sendable (GZoneEvent) -> Void
  private var running: Task<Result<Refresh, GZonePollerError>, Never>?
  private var uploadReloadPending = false

  /// - Parameter makeSource: the source for a configuration; the HTTP source by default.
  public init(
    store: Store, settings: @escaping Settings,
    makeSource: @escaping @Sendable (GZoneConfiguration, String?) -> any GZoneSource = {
      HTTPGZoneSource(configuration: $0, fallbackTokenFile: $1)
    },
    log: @escaping @Sendable (LogRecord.Level, String) -> Void,
    emit: @escaping @Sendable (GZoneEvent) -> Void
  ) {
    self.store = store
    self.settings = settings
    self.makeSource = makeSource
    self.log = log
    self.emit = emit
  }

  /// Loads now; returns the events that load made (already emitted and logged).
  public func refresh(reason: String) async throws(GZonePollerError) -> Refresh {
    if let running { return try await running.value.get() }
    let task = Task { await self.perform(reason: reason) }
    running = task
    let result = await task.value
    running = nil
    return try result.get()
  }

  private func perform(reason: String) async -> Result<Refresh, GZonePollerError> {
    let current = settings()
    guard current.gzone.isEnabled else { return .failure(.notConfigured) }
    let load: GZoneLoad
    do { load = try await makeSource(current.gzone, current.fallbackTokenFile).load() } catch {
      return .failure(.load(error))
    }
    let previous: GZoneLoad?
    do {
      previous = try await store.gzoneLastLoad()
      try await store.saveGZoneLoad(load)
    } catch {
      return .failure(.store(error))
    }
    guard let previous else {
      log(.notice, "G-Zone: first load (\(reason)); it is the baseline, so no events")
      return .success(Refresh(events: [], baseline: true))
    }
    let events = GZoneDiff.events(from: previous, to: load)
    log(.info, "G-Zone: loaded (\(reason)): \(events.count) event(s)")
    for event in events {
      log(.notice, "G-Zone \(event.type): \(event.jsonText)")
      emit(event)
    }
    return .success(Refresh(events: events, baseline: false))
  }

  /// Loads at the configured interval until cancelled, the first time at once. The interval
  /// and the URLs are read again each time, so SIGHUP applies them.
  public func run() async {
    while !Task.isCancelled {
      let interval = settings().gzone.interval
      if settings().gzone.isEnabled {
        do { _ = try await refresh(reason: "interval") } catch {
          log(.warning, "\(error.description); trying again in \(Int(interval)) s")
        }
      }
      try? await Task.sleep(for: .seconds(interval))
    }
  }

  /// The after-upload hook: a batch reached the backend, so reload once it has had
  /// `AfterUploadDelay` seconds to score it. Batches posted meanwhile share that one reload.
  public nonisolated func tripUploaded() {
    Task { await self.scheduleAfterUpload() }
  }

  /// Schedules one reload after `afterUploadDelay`; uploads meanwhile share it.
  func scheduleAfterUpload() {
    let current = settings().gzone
    guard current.isEnabled, !uploadReloadPending else { return }
    uploadReloadPending = true
    Task {
      try? await Task.sleep(for: .seconds(current.afterUploadDelay))
      await self.afterUpload()
    }
  }

  private func afterUpload() async {
    uploadReloadPending = false
    do { _ = try await refresh(reason: "trip uploaded") } catch {
      log(.warning, "\(error.description)")
    }
  }
}

/// The interval loop runs as one of the daemon's services (idle while no [GZone] is configured).
extension GZonePoller: Service {}
