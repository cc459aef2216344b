import BeaconCore
import BlueZ
import DBus
import DBusTestSupport
import Testing

/// A flood of random addresses must not grow BlueZ's object cache or ours (bleak issue #500).
@Suite(.timeLimit(.minutes(2)))
struct BoundedMemoryTests {
  @Test func staleDevicesAreRemovedAndKeptOnesStay() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let kept = BluetoothAddress("C0:FF:EE:00:00:07")!
    let recorder = EventRecorder(
      try await fixture.source {
        $0.staleDeviceAge = .milliseconds(300)
        $0.pruneInterval = .milliseconds(100)
        $0.keep = { $0 == kept }
      }.events())
    defer { Task { await recorder.cancel() } }
    // 20 random-looking devices and the paired beacon, each heard once.
    var flood: [ObjectPath] = []
    for i in 0..<20 {
      flood.append(try await fixture.addDevice("hci0", String(format: "5A:00:00:00:00:%02X", i)))
    }
    let beacon = try await fixture.addDevice("hci0", kept.description)
    try await recorder.wait("the flood is heard") { $0.sightings.count >= 21 }
    // Time passes; the paired beacon keeps advertising, which also wakes the source up.
    for _ in 0..<10 {
      try await Task.sleep(for: .milliseconds(100))
      try await fixture.advertise(beacon, ["RSSI": .int16(-60)])
    }
    try await recorder.wait("the flood is removed") { $0.lost.count >= 20 }
    let calls = try await fixture.adapterCalls("hci0")
    #expect(calls.filter { $0 == "RemoveDevice" }.count == 20)
    #expect(!recorder.lost.contains(kept))
    let objects = try await fixture.control.callReturningOne(
      destination: BlueZ.service, path: "/", interface: .objectManager, member: "GetManagedObjects", [])
    let paths = (objects.objectPathKeyedDictionary ?? [:]).keys.map(\.rawValue)
    #expect(paths.filter { $0.contains("/dev_") } == ["/org/bluez/hci0/dev_C0_FF_EE_00_00_07"])
    #expect(fixture.logLines.contains { $0.contains("removed") })
  }
}
