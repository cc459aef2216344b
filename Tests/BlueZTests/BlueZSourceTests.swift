import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Testing

/// Tier 2 (docs/DESIGN.md, Tests): the source against python-dbusmock's bluez5 template on a private bus.
/// Each test has its own bus and mock, so tests run in parallel.
@Suite(.timeLimit(.minutes(2)))
struct BlueZSourceTests {
  @Test func setsTheDiscoveryFilterBeforeStartDiscovery() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let source = fixture.source()
    #expect(source.mode == .activeDiscovery)
    #expect(source.description == "bluez (active discovery)")
    let recorder = EventRecorder(try await source.eventStream())
    #expect(try await fixture.adapterProperty("hci0", "Discovering") == .bool(true))
    let calls = try await fixture.adapterCalls("hci0")
    let filterIndex = try #require(calls.firstIndex(of: "SetDiscoveryFilter"), "calls: \(calls)")
    let startIndex = try #require(calls.firstIndex(of: "StartDiscovery"), "calls: \(calls)")
    #expect(filterIndex < startIndex)
    let filter = try await fixture.adapterProperty("hci0", "DiscoveryFilter").stringKeyedDictionary
    #expect(filter?["Transport"]?.unwrapped == "le")
    #expect(filter?["DuplicateData"]?.unwrapped == .bool(true))
    #expect(fixture.logLines.contains { $0.contains("discovery started on hci0") })

    await recorder.cancel()
    // Stop: StopDiscovery after the match rules are gone.
    try await waitUntil("the condition at this line") {
      try await fixture.adapterProperty("hci0", "Discovering") == .bool(false)
    }
    #expect(try await fixture.adapterCalls("hci0").last == "StopDiscovery")
  }

  @Test func choosesTheNamedAdapter() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    try await fixture.addAdapter("hci1")
    let recorder = EventRecorder(try await fixture.source(adapter: "hci1").eventStream())
    defer { Task { await recorder.cancel() } }
    #expect(try await fixture.adapterProperty("hci1", "Discovering") == .bool(true))
    #expect(try await fixture.adapterProperty("hci0", "Discovering") == .bool(false))
  }

  @Test func choosesTheFirstPoweredAdapter() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    try await fixture.addAdapter("hci1")
    try await fixture.setAdapterProperty("hci0", "Powered", false)
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    #expect(try await fixture.adapterProperty("hci1", "Discovering") == .bool(true))
    #expect(try await fixture.adapterProperty("hci0", "Discovering") == .bool(false))
  }

  @Test func unknownAdapterFailsClearly() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let error = await #expect(throws: BlueZError.self) {
      _ = try await fixture.source(adapter: "hci7").eventStream()
    }
    #expect(error?.code == .adapterNotFound)
    #expect(error?.message.contains("hci0") == true)
  }

  @Test func noAdapterFailsClearly() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    let error = await #expect(throws: BlueZError.self) { _ = try await fixture.source().eventStream() }
    #expect(error?.code == .noAdapter)
  }

  @Test func bluezMissingFailsClearly() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let error = await #expect(throws: BlueZError.self) {
      _ = try await BlueZAdvertisementSource(bus: bus.busAddress).eventStream()
    }
    #expect(error?.code == .bluezUnavailable)
  }

  @Test func iBeaconManufacturerDataBecomesASighting() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    // InterfacesAdded of a new device is its first sighting (the mock's initial RSSI is -79).
    try await recorder.wait("InterfacesAdded sighting") { $0.sightings.count >= 1 }
    #expect(recorder.sightings.first?.address == beaconAddress)
    #expect(recorder.sightings.first?.manufacturerData == [])  // the mock's aa{qv} is tolerated

    try await fixture.advertise(device, ["ManufacturerData": iBeaconManufacturerData()])
    try await recorder.wait("ManufacturerData sighting") { $0.sightings.count >= 2 }
    let sighting = try #require(recorder.sightings.last)
    #expect(sighting.address == beaconAddress)
    #expect(sighting.manufacturerData == [ManufacturerData(companyID: 0x004C, data: iBeaconBytes)])
    #expect(sighting.rssi == -79)  // cached from the device object

    // A PropertiesChanged with only RSSI is still a sighting, with the cached manufacturer data.
    try await fixture.advertise(device, ["RSSI": .int16(-58)])
    try await recorder.wait("RSSI-only sighting") { $0.sightings.count >= 3 }
    #expect(recorder.sightings.last?.rssi == -58)
    #expect(recorder.sightings.last?.manufacturerData.first?.data == iBeaconBytes)

    // Service data (Eddystone) too; a change of something else (Connected) is not a sighting.
    try await fixture.advertise(device, ["Connected": true])
    try await fixture.advertise(
      device,
      [
        "ServiceData": .dictionary(
          key: "s", value: "v",
          [.init(.string(ServiceUUID.eddystone.description), .variant(.bytes([0x10, 0x00])))])
      ])
    try await recorder.wait("ServiceData sighting") { $0.sightings.count >= 4 }
    #expect(recorder.sightings.count == 4)
    #expect(recorder.sightings.last?.serviceData == [ServiceData(uuid: .eddystone, data: [0x10, 0x00])])
  }

  @Test func interfacesRemovedIsLost() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    try await recorder.wait("sighting") { !$0.sightings.isEmpty }
    try await fixture.removeDevice("hci0", device)
    try await recorder.wait("lost") { !$0.lost.isEmpty }
    #expect(recorder.lost == [beaconAddress])
    #expect(recorder.all.last == .lost(beaconAddress))
  }

  @Test func resumesAfterBluetoothdRestarts() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    _ = try await fixture.addDevice("hci0", beaconAddress.description)
    try await recorder.wait("sighting before the restart") { !$0.sightings.isEmpty }

    try await fixture.restartBlueZ()
    let restarted = ContinuousClock.now
    try await fixture.addAdapter("hci0")
    try await waitUntil("discovery must resume within 5 s", timeout: .seconds(5)) {
      try await fixture.adapterProperty("hci0", "Discovering") == .bool(true)
    }
    print("bluez restart → discovery resumed after \(ContinuousClock.now - restarted)")
    #expect(fixture.logLines.contains { $0.contains("left the bus") })
    #expect(fixture.logLines.contains { $0.contains("on the bus again") })
    let calls = try await fixture.adapterCalls("hci0")
    #expect(calls.prefix(2) == ["SetDiscoveryFilter", "StartDiscovery"])
    // The device did not survive the restart: lost. New advertisements flow again.
    try await recorder.wait("lost after restart") { $0.lost == [beaconAddress] }
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    try await fixture.advertise(device, ["ManufacturerData": iBeaconManufacturerData()])
    try await recorder.wait("sighting after the restart") {
      $0.sightings.last?.manufacturerData.first?.data == iBeaconBytes
    }
  }

  @Test func resumesWhenTheAdapterComesBack() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source().eventStream())
    defer { Task { await recorder.cancel() } }
    _ = try await fixture.addDevice("hci0", beaconAddress.description)
    try await recorder.wait("sighting") { !$0.sightings.isEmpty }
    try await fixture.removeAdapter("hci0")
    try await recorder.wait("devices of a removed adapter are lost") { $0.lost == [beaconAddress] }
    try await fixture.addAdapter("hci0")
    try await waitUntil("the condition at this line", timeout: .seconds(5)) {
      try await fixture.adapterProperty("hci0", "Discovering") == .bool(true)
    }
    #expect(fixture.logLines.contains { $0.contains("was removed") })
  }
}
