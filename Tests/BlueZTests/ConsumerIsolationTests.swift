import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import Foundation
import Synchronization
import Testing

/// The consumer's form of the BlueZ source (`AdvertisementSource.run(isolation:)`):
/// each batch is handed over on the consumer's actor, in a job on the D-Bus reader thread, so no
/// other thread wakes per batch; and the radio is put back before `run` returns.
@Suite(.timeLimit(.minutes(2)))
struct ConsumerIsolationTests {
  actor Consumer {
    var threads: Set<String> = []
    /// Read by the test without a hop onto the actor: a poll that ran on the actor would hold it
    /// while the reader's job arrives, and the pool thread that held it would then run the batch.
    let progress = Mutex((started: false, sightings: 0))

    nonisolated var started: Bool { progress.withLock { $0.started } }
    nonisolated var sightings: Int { progress.withLock { $0.sightings } }

    func consume(_ source: some AdvertisementSource) async throws {
      try await source.run(isolation: self) {
        progress.withLock { $0.started = true }
      } deliver: { batch in
        // On this actor: the compiler lets the closure touch its state, and the runtime agrees.
        self.assertIsolated()
        threads.insert(ConsumerIsolationTests.threadName)
        let count = batch.count { if case .sighting = $0 { true } else { false } }
        progress.withLock { $0.sightings += count }
      }
    }
  }

  /// The calling thread's name, as the kernel has it.
  static var threadName: String {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
      .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
  }

  @Test func batchesReachTheConsumersActorOnTheReaderThread() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let consumer = Consumer()
    let source = fixture.source()
    let scan = Task { try await consumer.consume(source) }
    try await waitUntil("the consumer started") { consumer.started }
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    for rssi in [-60, -61, -62] {
      try await fixture.advertise(
        device, ["ManufacturerData": iBeaconManufacturerData(), "RSSI": .int16(Int16(rssi))])
    }
    // InterfacesAdded, then three PropertiesChanged.
    try await waitUntil("four sightings delivered") { consumer.sightings >= 4 }
    #expect(await consumer.threads == ["dbus-signal-str"])

    scan.cancel()
    // `finished()` waits for the cleanup (what a process on its way out awaits)...
    await source.finished()
    #expect(try await fixture.adapterCalls("hci0").last == "StopDiscovery")
    #expect(try await fixture.adapterProperty("hci0", "Discovering") == .bool(false))
    // ...and `run` returns only after it, without an error.
    try await scan.value
  }

  /// A session that fails as it starts throws from `run`, and `started` is never called.
  @Test func aFailedStartThrowsWithoutStarting() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let consumer = Consumer()
    await #expect(throws: BlueZError.self) { try await consumer.consume(fixture.source(adapter: "hci7")) }
    #expect(consumer.started == false)
  }
}
