import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
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
      }.eventStream())
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

  /// Past `maxDevices`, the devices heard least recently are forgotten and reported lost; kept
  /// ones and those heard lately stay.
  @Test func theMirrorIsCappedAndForgetsTheOldest() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let kept = BluetoothAddress("5A:00:00:00:00:00")!
    let recorder = EventRecorder(
      try await fixture.source {
        $0.maxDevices = 20
        $0.keep = { $0 == kept }
      }.eventStream())
    defer { Task { await recorder.cancel() } }
    var paths: [ObjectPath] = []
    for i in 0..<20 {
      paths.append(try await fixture.addDevice("hci0", String(format: "5A:00:00:00:00:%02X", i)))
    }
    try await recorder.wait("the first 20 are heard") { $0.sightings.count >= 20 }
    // The tenth is heard again, so it is no longer among the oldest.
    try await fixture.advertise(paths[9], ["RSSI": .int16(-60)])
    try await recorder.wait("the tenth is heard again") { $0.sightings.count >= 21 }
    for i in 20..<25 {
      paths.append(try await fixture.addDevice("hci0", String(format: "5A:00:00:00:00:%02X", i)))
    }
    // Over 20, the oldest are forgotten (those over, plus a tenth of the cap, per round), the kept
    // one skipped: 5, 6 or 7 in all, depending on how the new devices fall into D-Bus batches
    // (3 then 2 forget 5 then none; 4 then 1, 6; all 5 at once, or 2 then 3, 7).
    try await recorder.wait("the oldest are forgotten") { $0.lost.count >= 5 }
    // A barrier instead of a sleep: the source reports in order, so once a later signal is heard
    // every loss from the batches before it has been reported.
    let heard = recorder.sightings.count
    try await fixture.advertise(paths[24], ["RSSI": .int16(-61)])
    try await recorder.wait("a later signal is heard") { $0.sightings.count > heard }
    let lost = Set(recorder.lost)
    #expect(!lost.contains(kept))
    #expect(!lost.contains(BluetoothAddress("5A:00:00:00:00:09")!))
    #expect((5...7).contains(lost.count), "\(lost)")
    // Devices in one D-Bus batch share a time, so which of the first twenty go is not fixed;
    // none of the five newest does.
    #expect(lost.allSatisfy { $0.description < "5A:00:00:00:00:14" }, "only devices from the first twenty")
    #expect(fixture.logLines.contains { $0.contains("forgot the") })
  }

  /// A flood past `maxDevices` evicts round after round: the journal gets one line as it starts
  /// and one, with the count, once the mirror is back under what an eviction leaves, not a line
  /// a round (a real flood wrote a hundred in a few seconds).
  @Test func aFloodIsLoggedAsItStartsAndAsItEnds() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let recorder = EventRecorder(try await fixture.source { $0.maxDevices = 20 }.eventStream())
    defer { Task { await recorder.cancel() } }
    var paths: [ObjectPath] = []
    // One device at a time, each heard before the next: every eviction is a round of its own.
    for i in 0..<80 {
      paths.append(try await fixture.addDevice("hci0", String(format: "5B:00:00:00:00:%02X", i)))
      try await recorder.wait("device \(i) is heard") { $0.sightings.count > i }
    }
    #expect(recorder.lost.count >= 55, "\(recorder.lost.count) forgotten")
    func lines(_ text: String) -> [String] { fixture.logLines.filter { $0.contains(text) } }
    #expect(lines("forgot the").count == 1, "\(lines("forgot"))")
    #expect(lines("more devices").isEmpty, "the flood has not ended")
    // BlueZ drops the devices; the mirror falls under what an eviction leaves, and a pass of
    // signals that evicts none says how many more went.
    for path in paths.suffix(20) { try await fixture.removeDevice("hci0", path) }
    try await fixture.addDevice("hci0", "5B:00:00:00:01:00")
    try await waitUntil("the end of the flood is logged") { !lines("more devices").isEmpty }
    #expect(lines("forgot the").count == 1)
  }
}
