import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Testing

/// Issue "Scan real BlueZ over D-Bus", resilience: each recovers by itself, with a log line.
@Suite(.timeLimit(.minutes(2)))
struct ResilienceTests {
  func startDiscoveries(_ fixture: BlueZFixture) async throws -> Int {
    try await fixture.adapterCalls("hci0").filter { $0 == "StartDiscovery" }.count
  }

  @Test func poweredOffWaitsAndSaysSoThenResumes() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    try await waitUntil("the condition at this line") { try await startDiscoveries(fixture) == 1 }
    try await fixture.setAdapterProperty("hci0", "Powered", false)
    try await waitUntil("the condition at this line") {
      fixture.logLines.contains { $0.contains("powered off; waiting for power") }
    }
    try await fixture.setAdapterProperty("hci0", "Powered", true)
    try await waitUntil("the condition at this line") { try await startDiscoveries(fixture) == 2 }
  }

  @Test func discoveryStoppedBySomeoneElseIsRestarted() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    try await waitUntil("the condition at this line") {
      try await fixture.adapterProperty("hci0", "Discovering") == .bool(true)
    }
    // Another client stops discovery (as `bluetoothctl scan off` would).
    _ = try await fixture.control.call(
      destination: BlueZ.service, path: "/org/bluez/hci0", interface: BlueZ.adapterInterface,
      member: "StopDiscovery", [])
    try await waitUntil("the condition at this line") {
      fixture.logLines.contains { $0.contains("stopped by someone else") }
    }
    try await waitUntil("the condition at this line") { try await startDiscoveries(fixture) == 2 }
    try await waitUntil("the condition at this line") {
      try await fixture.adapterProperty("hci0", "Discovering") == .bool(true)
    }
  }

  @Test func malformedPropertyTypesAreIgnoredWithALogLine() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    try await recorder.wait("first sighting") { $0.sightings.count >= 1 }
    try await fixture.advertise(
      device, ["RSSI": .string("loud"), "ManufacturerData": .string("not a dictionary")])
    try await waitUntil("the condition at this line") {
      fixture.logLines.contains { $0.contains("ignored RSSI of type s") }
    }
    #expect(fixture.logLines.contains { $0.contains("ManufacturerData of type s") })
    // Short manufacturer data is passed on as it is (the frame parser rejects it), and the
    // source keeps going.
    try await fixture.advertise(
      device,
      [
        "ManufacturerData": .dictionary(
          key: "q", value: "v", [.init(.uint16(0x004C), .variant(.bytes([0x02, 0x15, 0xE2])))])
      ])
    try await fixture.advertise(device, ["ManufacturerData": iBeaconManufacturerData(), "RSSI": .int16(-60)])
    try await recorder.wait("a good sighting after the bad ones") {
      $0.sightings.last?.manufacturerData.first?.data == iBeaconBytes
    }
    let short = recorder.sightings.first { $0.manufacturerData.first?.data == [0x02, 0x15, 0xE2] }
    let parsed = try BeaconFrameParser.parse(#require(short))
    #expect(parsed.rejections.map(\.reason) == [.iBeaconShortBody])
  }
}
