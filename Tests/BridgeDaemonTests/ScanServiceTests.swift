import BeaconCore
import BeaconTestSupport
import BlueZ
import Synchronization
import Testing

@testable import BridgeDaemon

/// The daemon's scan loop: backoff that holds for failures arriving at start and
/// after the stream was handed over, reset only by a scan that ran, and honest conditions.
@Suite struct ScanServiceTests {
  struct Refused: Error, CustomStringConvertible {
    var description: String { "permission denied" }
  }

  /// A source that fails as it starts, or fails as soon as it has started (as the HCI
  /// source does when the controller refuses a command), or runs until told to fail.
  final class ScriptedSource: AdvertisementSource {
    enum Failure { case atStart, inStream, whenTold }
    let failure: Failure
    let description = "scripted"
    let adapter = MockAdapter()
    init(_ failure: Failure) { self.failure = failure }

    func run(
      isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
    ) async throws {
      switch failure {
      case .atStart: throw Refused()
      case .inStream:
        started()
        throw Refused()
      case .whenTold: try await adapter.run(isolation: isolation, started: started, deliver: deliver)
      }
    }
  }

  /// What a running service reported.
  final class Record: Sendable {
    let conditions = Mutex<[ScanCondition]>([])
    let lines = Mutex<[String]>([])
    let sources = Mutex<[ScriptedSource]>([])
  }

  /// Runs a service over sources made by `make`, recording its conditions and log lines.
  final class Harness: Sendable {
    let clock = TestClock()
    let record = Record()
    let task = Mutex<Task<Void, Never>?>(nil)
    var conditions: [ScanCondition] { record.conditions.withLock { $0 } }
    var lines: [String] { record.lines.withLock { $0 } }
    var sources: [ScriptedSource] { record.sources.withLock { $0 } }

    init(_ make: @escaping @Sendable (Int) -> ScriptedSource.Failure) {
      let record = record
      let service = ScanService(
        makeSource: { _ in
          record.sources.withLock { list in
            let source = ScriptedSource(make(list.count))
            list.append(source)
            return source
          }
        },
        consume: { source, started in
          try await source.run(isolation: nil, started: started) { _ in }
        },
        report: { condition in record.conditions.withLock { $0.append(condition) } },
        log: { _, line in record.lines.withLock { $0.append(line) } },
        explain: { String(describing: $0) },
        clock: clock)
      task.withLock { $0 = Task { await service.run() } }
    }

    deinit { task.withLock { $0?.cancel() } }

    /// The retry delays announced, in order.
    var retries: [Int] {
      conditions.compactMap { if case .failing(_, let retry) = $0 { retry } else { nil } }
    }

    /// Lets the service fail `count` times, moving the clock past each backoff.
    func failures(_ count: Int) async {
      for n in 1...count {
        await clock.waitForSleepers(count: 1)
        #expect(retries.count == n)
        clock.advance(by: .seconds(retries.last ?? 0))
      }
    }
  }

  @Test(arguments: [ScriptedSource.Failure.atStart, .inStream])
  func failuresBackOffUpToThirtySeconds(_ failure: ScriptedSource.Failure) async {
    let harness = Harness { _ in failure }
    await harness.failures(7)
    // Quiet again: the eighth failure is logged and the service sleeps.
    await harness.clock.waitForSleepers(count: 1)
    #expect(harness.retries == [1, 2, 4, 8, 16, 30, 30, 30])
    #expect(
      harness.lines.filter { $0.contains("cannot scan: permission denied") }.count == harness.retries.count)
  }

  @Test func onlyAScanThatRanResetsTheBackoff() async throws {
    // Three quick failures, then a scan that runs for two minutes, then a failure.
    let harness = Harness { $0 < 3 ? .inStream : .whenTold }
    await harness.failures(3)
    try await waitUntil("scanning again") { harness.conditions.last == .scanning(backend: "scripted") }
    #expect(Array(harness.retries) == [1, 2, 4])
    let running = try #require(harness.sources.last)
    harness.clock.advance(by: .seconds(120))
    running.adapter.finish(throwing: Refused())
    await harness.clock.waitForSleepers(count: 1)
    #expect(harness.retries == [1, 2, 4, 1])
  }

  @Test func aStopIsNotAnEndedScan() async throws {
    let harness = Harness { _ in .whenTold }
    try await waitUntil("a scan condition") { !harness.conditions.isEmpty }
    #expect(harness.conditions == [.scanning(backend: "scripted")])
    harness.task.withLock { $0?.cancel() }
    await harness.task.withLock { $0 }?.value
    #expect(harness.lines.contains { $0.contains("ended") } == false)
    #expect(harness.retries.isEmpty)
  }

  @Test func waitingIsReportedAsWaitingNotScanning() {
    let waiting = ScanCondition.waiting(backend: "bluez", reason: ScanWait(.noBlueZAdapter))
    #expect(waiting.scanningBackend == nil)
    #expect(waiting.summary == "not scanning: waiting for an adapter (BlueZ has none)")
    #expect(StatusDocument.Scan(waiting).json["state"]?.stringValue == "waiting")
    let failing = ScanCondition.failing(reason: "permission denied", retryInSeconds: 8)
    #expect(failing.summary == "not scanning: permission denied; retrying in 8 s")
  }
}
