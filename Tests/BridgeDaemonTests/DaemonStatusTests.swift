import BeaconCore
import BeaconTestSupport
import Testing

@testable import BridgeDaemon

/// The status contract: what the daemon writes for D-Bus `Status` (`BridgeStatus.json`) is what
/// `DaemonStatus`, which `status` and `doctor` read, finds in it.
@Suite struct DaemonStatusTests {
  @Test func theDaemonsJSONReadsBackField() async throws {
    var configuration = BridgeConfiguration()
    configuration.trips.configuredDeviceId = "SERIAL-1"
    configuration.trips.sending = .postTrip
    let host = RecordingHost(configuration: configuration)
    let bridge = BeaconBridge(host: host, clock: TestClock(), journal: MemoryJournal())
    try await bridge.start()
    try await bridge.tripStart("t1")
    try await bridge.tripEvents("t1", events: [Fixtures.event("braking", at: 1)])
    let outbox = OutboxSummary(
      trips: 1, undelivered: 3, unresolvedTrips: 1, deadLetters: 2, limit: 100, oldestAge: 12)
    let json = await bridge.status.json(
      scan: .waiting(backend: "bluez", reason: "no Bluetooth adapter"), outbox: outbox)
    let status = DaemonStatus(json: json)
    #expect(status.scanning == nil)
    #expect(status.scan == DaemonStatus.Scan(state: "waiting", detail: "no Bluetooth adapter"))
    #expect(status.activeBeacon == nil && status.beaconsInRange.isEmpty)
    let trip = try #require(await bridge.status.trips.first)
    #expect(trip.heldBatches + trip.waitingForEnd >= 1)
    #expect(
      status.trips == [
        DaemonStatus.Trip(
          tripId: "t1", deviceId: trip.resolution.deviceId, resolution: trip.resolution.reason,
          heldBatches: trip.heldBatches,
          waitingForEnd: trip.waitingForEnd)
      ], "\(json.compactText)")
    #expect(status.outbox == DaemonStatus.Outbox(undelivered: 3, deadLetters: 2, unresolvedTrips: 1))
    #expect(status.upload?.state == "idle" && status.upload?.delivered == 0)
    let scanning = DaemonStatus(json: await bridge.status.json(scan: .scanning(backend: "hci0"), outbox: nil))
    #expect(scanning.scanning == "hci0" && scanning.scan?.state == "scanning" && scanning.outbox == nil)
  }

  /// A reply with fields missing or of another type (an older or newer daemon) reads as absent.
  @Test func aStrangeReplyReadsAsAbsent() throws {
    let status = DaemonStatus(
      json: .object(["scanning": .int(3), "trips": .string("x"), "upload": .object([:]), "outbox": .null]))
    #expect(status.scanning == nil && status.trips.isEmpty && status.upload == nil && status.outbox == nil)
  }
}
