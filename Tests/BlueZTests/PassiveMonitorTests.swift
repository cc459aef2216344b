import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import Testing

/// Passive scanning through AdvertisementMonitorManager1. dbusmock's bluez5 template lacks the
/// manager, so the test adds it to the mock adapter and plays bluetoothd's calls back.
@Suite(.timeLimit(.minutes(2)))
struct PassiveMonitorTests {
  @Test func registersAnIBeaconMonitorAndReportsItsDevices() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    try await fixture.addMonitorManager("hci0")
    let source = fixture.source(preferredMode: .passiveMonitor)
    let recorder = EventRecorder(try await source.eventStream())
    defer { Task { await recorder.cancel() } }
    #expect(source.mode == .passiveMonitor)
    #expect(source.description == "bluez (passive monitor)")
    let calls = try await fixture.adapterCalls("hci0")
    #expect(calls.contains("RegisterMonitor"))
    #expect(!calls.contains("StartDiscovery"))
    #expect(try await fixture.adapterProperty("hci0", "Discovering") == .bool(false))

    // bluetoothd reads the application's objects: one or_patterns monitor for iBeacon.
    let client = try await fixture.clientName()
    let objects = try await fixture.clientObjects(client, "/org/beaconbridge/monitor")
    let monitors = try #require(objects.objectPathKeyedDictionary)
    let monitorPath = try #require(monitors.keys.first)
    let properties = try #require(
      monitors[monitorPath]?.stringKeyedDictionary?["org.bluez.AdvertisementMonitor1"]?.stringKeyedDictionary)
    #expect(properties["Type"]?.string == "or_patterns")
    let pattern = try #require(properties["Patterns"]?.arrayElements?.first)
    #expect(pattern == .structure([.byte(0), .byte(0xFF), .bytes([0x4C, 0x00, 0x02, 0x15])]))

    try await fixture.callMonitor(client, monitorPath, "Activate")
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    try await fixture.advertise(device, ["ManufacturerData": iBeaconManufacturerData()])
    try await recorder.wait("advertisement sighting") {
      $0.sightings.contains { $0.manufacturerData.first?.data == iBeaconBytes }
    }
    let before = recorder.sightings.count
    try await fixture.callMonitor(client, monitorPath, "DeviceFound", device: device)
    try await recorder.wait("DeviceFound sighting") { $0.sightings.count == before + 1 }
    #expect(recorder.sightings.last?.manufacturerData.first?.data == iBeaconBytes)
    try await fixture.callMonitor(client, monitorPath, "DeviceLost", device: device)
    try await recorder.wait("monitor lost") { $0.lost == [beaconAddress] }
    #expect(fixture.logLines.contains { $0.contains("monitor active") })

    // Anyone but bluetoothd is ignored.
    let count = recorder.all.count
    _ = try await fixture.control.call(
      destination: BusName(client), path: monitorPath, interface: "org.bluez.AdvertisementMonitor1",
      member: "DeviceFound", [.objectPath(device)])
    try await waitUntil("the condition at this line") {
      fixture.logLines.contains { $0.contains("ignored a monitor call") }
    }
    #expect(recorder.all.count == count)

    await recorder.cancel()
    try await waitUntil("the condition at this line") {
      try await fixture.adapterCalls("hci0").last == "UnregisterMonitor"
    }
  }

  @Test func fallsBackToActiveDiscoveryWithoutMonitorSupport() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let source = fixture.source(preferredMode: .passiveMonitor)
    #expect(source.mode == .passiveMonitor)  // asked for, not yet running
    let recorder = EventRecorder(try await source.eventStream())
    defer { Task { await recorder.cancel() } }
    #expect(source.mode == .activeDiscovery)
    #expect(try await fixture.adapterProperty("hci0", "Discovering") == .bool(true))
    #expect(fixture.logLines.contains { $0.contains("no or_patterns") })
  }
}
