import BeaconCore
import BeaconTestSupport
import Foundation
import Synchronization
import Testing

// The README's integrator example, compiled and run, so that it stays true.

// README-EXAMPLE-BEGIN
/// The one type an integrator writes: a beacon-mode host for a van's telematics box.
struct VanHost: ScopeHost {
  let backend: Backend  // your upload client

  // Configuration values: every setting has a default; override what your fleet needs.
  var configuration: BridgeConfiguration {
    var config = BridgeConfiguration()
    config.trips.unresolvedPolicy = .hold  // keep untagged trips until `trip assign`
    config.selector.activeHold = 30
    return config
  }

  // The logging adapter.
  func log(_ record: LogRecord) { print("<\(record.level.rawValue)>\(record.message)") }

  // Beacon/mHub mode: forward trip start to the beacon layer, which snapshots the active beacon.
  func onBeaconTripStart(_ trip: BeaconTripStart) async {
    await trip.snapshotActiveBeacon()
  }

  // The upload layer: throwing keeps the batch queued; the bridge retries it.
  func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
    try await backend.post(
      deviceId: batch.deviceId.rawValue, tripId: batch.tripId.rawValue, key: batch.idempotencyKey,
      events: batch.events.map(\.json))
  }
}

// Arm it once the configuration is known, feed it a radio, and drive trips:
//   let bridge = BeaconBridge(host: VanHost(backend: backend))
//   try await bridge.start()
//   Task { try await bridge.run(source: scanner) }
//   try await bridge.tripStart("trip-1")
//   try await bridge.tripEvents("trip-1", events: events)
// README-EXAMPLE-END

/// A stand-in backend for the example.
final class Backend: Sendable {
  let received = Mutex<[(String, String, Int)]>([])
  func post(deviceId: String, tripId: String, key: String, events: [JSONValue]) async throws {
    received.withLock { $0.append((deviceId, tripId, events.count)) }
  }
}

@Suite struct ReadmeExampleTests {
  @Test func theExampleHostTagsATrip() async throws {
    let backend = Backend()
    let clock = TestClock()
    let bridge = BeaconBridge(host: VanHost(backend: backend), clock: clock)
    await bridge.setPairings([Fixtures.vanPairing])
    try await bridge.start()
    for t in 0...2 {
      clock.set(seconds: Double(t))
      await bridge.ingest(
        .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -58)))
    }
    try await bridge.tripStart("trip-1")
    try await bridge.tripEvents("trip-1", events: [Fixtures.event("braking", at: 3)])
    let received = backend.received.withLock { $0 }
    #expect(received.count == 1)
    #expect(received.first?.0 == "UNIT-0042")
    #expect(received.first?.2 == 1)
  }
}

@Suite struct ReadmeTests {
  @Test func readmeShowsTheCompiledExample() throws {
    let here = URL(fileURLWithPath: #filePath)
    let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let source = try String(contentsOf: here, encoding: .utf8)
    let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
    let begin = try #require(lines.firstIndex { $0.hasSuffix("README-EXAMPLE-BEGIN") })
    let end = try #require(lines.firstIndex { $0.hasSuffix("README-EXAMPLE-END") })
    let example = lines[(begin + 1)..<end].joined(separator: "\n")
    #expect(readme.contains(example), "README.md's ScopeHost example differs from the compiled one")
    #expect(readme.contains("make demo"))
    #expect(readme.contains("make test"))
  }
}
