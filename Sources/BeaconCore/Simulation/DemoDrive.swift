#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The embedded default: a scripted drive for `beaconbridge demo`.
///
/// - Van 7's beacon (paired to UNIT-0042) sits in the cab, at 1 Hz, losing 40% of its packets.
/// - Trip t1 starts at 30 s. At that moment van 9's beacon (paired to UNIT-0099, another vehicle)
///   passes by, stronger for four seconds; it must not win.
/// - An unpaired beacon passes by, strong; it is tracked but never becomes active.
/// - Trip t1's events are posted during the drive and tagged UNIT-0042; it ends at 80 s.
/// - The driver leaves; van 7's beacon goes quiet and its hold runs out.
/// - Trip t2 starts at 120 s with no beacon in range. Its first batch is held; the beacon comes
///   back at 135 s (late) and the trip is tagged, held batch included. It ends at 160 s.
public enum DemoDrive {
  public static let fleetUUID = UUID(uuidString: "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!
  public static let strangerUUID = UUID(uuidString: "FDA50693-A4E2-4FB1-AFCF-C6EB07647825")!

  public static let van7 = BeaconIdentity(uuid: fleetUUID, major: 1, minor: 7)
  public static let van9 = BeaconIdentity(uuid: fleetUUID, major: 1, minor: 9)
  public static let stranger = BeaconIdentity(uuid: strangerUUID, major: 10_001, minor: 3)

  public static var scenario: Scenario {
    var scenario = Scenario()
    scenario.pairings = [
      Pairing(uuid: fleetUUID, major: 1, minor: 7, deviceId: "UNIT-0042", label: "van 7"),
      Pairing(uuid: fleetUUID, major: 1, minor: 9, deviceId: "UNIT-0099", label: "van 9"),
    ]
    var generator = SeededGenerator(seed: 7)
    let cab = BluetoothAddress("C0:FF:EE:00:00:07")!
    // In the cab: about -62 dBm, 1 Hz, 40% loss; quiet from 82 s to 135 s (driver away).
    scenario.add(
      ScriptedBeacon(address: cab, identity: van7, rssi: { _ in -62 }, loss: 0.4, from: 0, until: 82).entries(
        using: &generator))
    scenario.add(
      ScriptedBeacon(address: cab, identity: van7, rssi: { _ in -62 }, loss: 0.4, from: 135, until: 170)
        .entries(
          using: &generator))
    // Van 9 passes by at trip start, 10 dB stronger for four seconds.
    scenario.add(
      ScriptedBeacon(
        address: BluetoothAddress("C0:FF:EE:00:00:09")!, identity: van9, rssi: { _ in -52 }, interval: 0.5,
        loss: 0.2,
        from: 28, until: 32
      ).entries(using: &generator))
    // An unpaired beacon, strong, passing by.
    scenario.add(
      ScriptedBeacon(
        address: BluetoothAddress("DE:AD:BE:EF:00:03")!, identity: stranger, rssi: { t in -45 - abs(t - 55) },
        loss: 0.3,
        from: 45, until: 65
      ).entries(using: &generator))

    func events(_ items: [(String, Double)]) -> [TripEvent] {
      items.map {
        TripEvent(fields: ["type": .string($0.0), "at": .double($0.1), "severity": .string("moderate")])
      }
    }
    scenario.add([
      .init(at: 30, action: .tripStart(tripId: "t1")),
      .init(
        at: 45,
        action: .tripEvents(tripId: "t1", events: events([("braking", 41.2), ("acceleration", 44.0)]))),
      .init(
        at: 65, action: .tripEvents(tripId: "t1", events: events([("cornering", 58.5), ("speeding", 63.1)]))),
      .init(
        at: 80,
        action: .tripEvents(
          tripId: "t1", events: events([("distractionStart", 75.0), ("distractionEnd", 78.0)]))),
      .init(at: 80, action: .tripEnd(tripId: "t1")),
      .init(at: 120, action: .tripStart(tripId: "t2")),
      .init(at: 128, action: .tripEvents(tripId: "t2", events: events([("braking", 126.0)]))),
      .init(
        at: 150,
        action: .tripEvents(tripId: "t2", events: events([("harshBump", 147.5), ("speeding", 149.0)]))),
      .init(at: 160, action: .tripEnd(tripId: "t2")),
    ])
    scenario.duration = 170
    return scenario
  }
}
