import BeaconCore
import Testing

/// Issue 17: TLM and URL linked to beacons by address, health thresholds, ignored kinds counted.
@Suite struct BeaconHealthTests {
  static let van7 = BeaconIdentity(
    uuid: Fixture.uuid("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"), major: 1, minor: 7)
  static let beaconAddress = BluetoothAddress("C0:FF:EE:00:00:07")!
  static let otherAddress = BluetoothAddress("C0:FF:EE:00:00:08")!

  static func iBeacon(_ address: BluetoothAddress = beaconAddress, rssi: Int = -60) -> SourceEvent {
    let body =
      [0x02, 0x15] + Fixture.bytes("E2C56DB5DFFB48D2B060D0F5A71096E0") + [0x00, 0x01, 0x00, 0x07, 0xC5]
    return .sighting(
      Advertisement(
        address: address, rssi: rssi, manufacturerData: [ManufacturerData(companyID: 0x004C, data: body)]))
  }

  /// Eddystone-TLM version 0 (Eddystone-TLM specification), hand-built field by field.
  static func tlm(_ address: BluetoothAddress = beaconAddress, mv: UInt16, uptime tenths: UInt32)
    -> SourceEvent
  {
    let data: [UInt8] =
      [0x20, 0x00, UInt8(mv >> 8), UInt8(mv & 0xFF), 0x15, 0x80]  // 21.5 °C
      + [0x00, 0x00, 0x01, 0x00]  // 256 PDUs
      + [
        UInt8(tenths >> 24), UInt8((tenths >> 16) & 0xFF), UInt8((tenths >> 8) & 0xFF), UInt8(tenths & 0xFF),
      ]
    return .sighting(
      Advertisement(address: address, rssi: -61, serviceData: [ServiceData(uuid: .eddystone, data: data)]))
  }

  static func serviceData(_ address: BluetoothAddress, _ hex: String) -> SourceEvent {
    .sighting(
      Advertisement(
        address: address, rssi: -70, serviceData: [ServiceData(uuid: .eddystone, data: Fixture.bytes(hex))]))
  }

  func pipeline(paired: Bool = true, _ configure: (inout BridgeConfiguration) -> Void = { _ in })
    -> BeaconPipeline
  {
    var configuration = BridgeConfiguration()
    configure(&configuration)
    var pipeline = BeaconPipeline(configuration: configuration)
    if paired {
      _ = pipeline.setPairings(
        PairingSet([Pairing(uuid: Self.van7.uuid, major: 1, minor: 7, deviceId: "UNIT-0042")]), at: .zero)
    }
    return pipeline
  }

  func changes(_ steps: [BeaconPipeline.Step]) -> [HealthChange.Kind] {
    steps.compactMap { if case .event(.beaconHealth(let c)) = $0 { c.kind } else { nil } }
  }

  func telemetry(_ steps: [BeaconPipeline.Step]) -> [TelemetryReport] {
    steps.compactMap { if case .event(.telemetry(let r)) = $0 { r } else { nil } }
  }

  @Test func tlmAfterTheIdentityIsLinked() {
    var p = pipeline()
    _ = p.ingest(Self.iBeacon(), at: Timestamp(seconds: 0))
    let reports = telemetry(p.ingest(Self.tlm(mv: 3000, uptime: 100), at: Timestamp(seconds: 1)))
    #expect(reports.map(\.id) == [.iBeacon(Self.van7)])
    #expect(reports.first?.telemetry.batteryMillivolts == 3000)
    #expect(reports.first?.telemetry.temperature == 21.5)
    #expect(p.health.health[.iBeacon(Self.van7)]?.telemetry?.uptime == 10)
  }

  @Test func tlmBeforeTheIdentityWaitsForItWithinTheWindow() {
    var p = pipeline()
    #expect(telemetry(p.ingest(Self.tlm(mv: 3000, uptime: 100), at: .zero)).map(\.id) == [nil])
    let linked = telemetry(p.ingest(Self.iBeacon(), at: Timestamp(seconds: 5)))
    #expect(linked.map(\.id) == [.iBeacon(Self.van7)])
    // Past the window (30 s by default) a waiting TLM is not linked.
    var late = pipeline()
    _ = late.ingest(Self.tlm(mv: 3000, uptime: 100), at: .zero)
    #expect(telemetry(late.ingest(Self.iBeacon(), at: Timestamp(seconds: 31))).isEmpty)
    #expect(late.health.health.isEmpty)
  }

  /// A beacon sending TLM from another address than its identity (separate advertising sets with
  /// their own random addresses) is not linked: the documented limit.
  @Test func tlmFromAnotherAddressIsNotLinked() {
    var p = pipeline()
    _ = p.ingest(Self.iBeacon(), at: .zero)
    #expect(
      telemetry(p.ingest(Self.tlm(Self.otherAddress, mv: 3000, uptime: 1), at: Timestamp(seconds: 1))).map(
        \.id) == [nil])
    // An identity heard last longer ago than the window is not linked either.
    #expect(telemetry(p.ingest(Self.tlm(mv: 3000, uptime: 1), at: Timestamp(seconds: 40))).map(\.id) == [nil])
  }

  @Test func batteryLowOnceWithHysteresis() {
    var p = pipeline()
    _ = p.ingest(Self.iBeacon(), at: .zero)
    var seen: [HealthChange.Kind] = []
    for (i, mv) in [2600, 2499, 2480, 2520, 2549, 2550, 2499].enumerated() {
      let t = Timestamp(seconds: Double(i + 1))
      _ = p.ingest(Self.iBeacon(), at: t)
      seen += changes(p.ingest(Self.tlm(mv: UInt16(mv), uptime: UInt32(10 * (i + 1))), at: t))
    }
    #expect(seen == [.batteryLow, .batteryRecovered, .batteryLow])
  }

  @Test func thresholdIsAConfigurationKey() throws {
    var configuration = BridgeConfiguration()
    try configuration.set("lowBatteryMillivolts", to: "2700")
    #expect(BridgeConfiguration.section(of: "lowBatteryMillivolts") == "Health")
    var p = pipeline { $0 = configuration }
    _ = p.ingest(Self.iBeacon(), at: .zero)
    #expect(changes(p.ingest(Self.tlm(mv: 2650, uptime: 1), at: Timestamp(seconds: 1))) == [.batteryLow])
  }

  @Test func uptimeGoingBackwardsIsAReboot() {
    var p = pipeline()
    _ = p.ingest(Self.iBeacon(), at: .zero)
    _ = p.ingest(Self.tlm(mv: 3000, uptime: 5000), at: Timestamp(seconds: 1))
    #expect(changes(p.ingest(Self.tlm(mv: 3000, uptime: 5100), at: Timestamp(seconds: 11))).isEmpty)
    #expect(changes(p.ingest(Self.tlm(mv: 3000, uptime: 3), at: Timestamp(seconds: 21))) == [.rebooted])
    let status = p.pairedBeacons.first
    #expect(status?.health.reboots == 1)
    #expect(status?.health.lastRebootAt == Timestamp(seconds: 21))
  }

  @Test func unpairedBeaconsHaveHealthButNoSignals() {
    var p = pipeline(paired: false)
    _ = p.ingest(Self.iBeacon(), at: .zero)
    #expect(changes(p.ingest(Self.tlm(mv: 2000, uptime: 1), at: Timestamp(seconds: 1))).isEmpty)
    #expect(p.health.health[.iBeacon(Self.van7)]?.batteryLow == true)
    #expect(p.pairedBeacons.isEmpty)
  }

  @Test func silentAfterAndSeenAgain() {
    var p = pipeline { $0.health.silentAfter = 30 }
    for t in 0..<5 { _ = p.ingest(Self.iBeacon(), at: Timestamp(seconds: Double(t))) }
    var kinds: [HealthChange.Kind] = []
    var time = 5.0
    while let deadline = p.nextDeadline, deadline.seconds < 200 {
      time = deadline.seconds
      kinds += changes(p.tick(at: deadline))
    }
    #expect(kinds == [.silent])
    #expect(time >= 4 + 30)
    #expect(p.pairedBeacons.first?.inRange == false)
    #expect(p.pairedBeacons.first?.health.silent == true)
    #expect(changes(p.ingest(Self.iBeacon(), at: Timestamp(seconds: 300))) == [.seenAgain])
  }

  /// Many paired beacons leaving at different times (one pairing of the whole UUID): each falls
  /// silent once, `silentAfter` after its last sighting, in time order; one that came back and
  /// left again falls silent only after its second departure; a reload's shorter `silentAfter`
  /// brings the silences forward.
  @Test func departedBeaconsFallSilentEachAtItsTime() {
    var settings = BridgeConfiguration()
    settings.presence.exitTimeout = 1
    settings.presence.exitTimeoutMax = 1
    settings.health.silentAfter = 100
    var p = BeaconPipeline(
      configuration: settings,
      pairings: PairingSet([Pairing(uuid: Self.van7.uuid, major: nil, minor: nil, deviceId: "FLEET")]))
    func beacon(_ minor: UInt16) -> SourceEvent {
      let body =
        [0x02, 0x15] + Fixture.bytes("E2C56DB5DFFB48D2B060D0F5A71096E0")
        + [0x00, 0x01, UInt8(minor >> 8), UInt8(minor & 0xFF), 0xC5]
      return .sighting(
        Advertisement(
          address: BluetoothAddress(bytes: [0xC0, 0xFF, 0xEE, 0, UInt8(minor >> 8), UInt8(minor & 0xFF)])!,
          rssi: -60, manufacturerData: [ManufacturerData(companyID: 0x004C, data: body)]))
    }
    var silentAt: [UInt16: Double] = [:]
    func step(to t: Double) {
      while let due = p.nextDeadline, due.seconds <= t {
        for case .event(.beaconHealth(let change)) in p.tick(at: due) where change.kind == .silent {
          silentAt[change.id.identity?.minor ?? 0] = due.seconds
        }
      }
    }
    // Beacon n heard at n seconds, for n in 0..<50; beacon 7 heard again at 60.
    for n in 0..<50 {
      step(to: Double(n))
      _ = p.ingest(beacon(UInt16(n)), at: Timestamp(seconds: Double(n)))
    }
    step(to: 60)
    _ = p.ingest(beacon(7), at: Timestamp(seconds: 60))
    step(to: 120)
    // Beacons 0 to 20 (last seen 0…20, silent at 100…120), not 7.
    #expect(silentAt.keys.sorted() == (0...20).filter { $0 != 7 }.map(UInt16.init), "\(silentAt)")
    for (minor, at) in silentAt { #expect(abs(at - (Double(minor) + 100)) < 1e-9, "\(minor) at \(at)") }
    var shorter = settings
    shorter.health.silentAfter = 10
    p.reconfigure(shorter, at: Timestamp(seconds: 120))
    step(to: 121)
    // The rest fall silent at once (all were last seen over 10 s before), 7 among them.
    #expect(silentAt.count == 50, "\(silentAt.keys.sorted())")
    #expect(silentAt[7] != nil)
  }

  @Test func packetLossAsTheTrackerEstimatesIt() {
    var p = pipeline()
    // 1 Hz, every other packet lost: half the expected packets arrive.
    for t in stride(from: 0.0, through: 40, by: 2) { _ = p.ingest(Self.iBeacon(), at: Timestamp(seconds: t)) }
    _ = p.ingest(Self.iBeacon(), at: Timestamp(seconds: 41))
    let loss = p.pairedBeacons.first?.packetLoss
    #expect(loss.map { abs($0 - 20.0 / 42.0) < 1e-9 } == true, "\(String(describing: loss))")
  }

  @Test func ignoredKindsAreCountedNotRejected() {
    var p = pipeline()
    var steps: [BeaconPipeline.Step] = []
    steps += p.ingest(Self.serviceData(Self.otherAddress, "30e34549445f74657374"), at: .zero)
    steps += p.ingest(Self.serviceData(Self.otherAddress, "30e34549445f74657374"), at: .zero)
    steps += p.ingest(
      Self.serviceData(Self.otherAddress, "40" + String(repeating: "5a", count: 20) + "01"), at: .zero)
    steps += p.ingest(
      Self.serviceData(Self.otherAddress, "2001" + String(repeating: "00", count: 16)), at: .zero)
    #expect(steps.isEmpty)
    #expect(p.health.ignoredFrames == ["eddystoneEID": 2, "eddystoneFindHub": 1, "eddystoneTLMEncrypted": 1])
  }

  @Test func urlIsLinkedAndReportedWhenItChanges() {
    var p = pipeline()
    _ = p.ingest(Self.iBeacon(), at: .zero)
    let first = p.ingest(Self.serviceData(Self.beaconAddress, "10eb03" + "6578616d706c65" + "07"), at: .zero)
    let again = p.ingest(Self.serviceData(Self.beaconAddress, "10eb03" + "6578616d706c65" + "07"), at: .zero)
    #expect(first.count == 1)
    #expect(again.isEmpty)
    #expect(p.health.health[.iBeacon(Self.van7)]?.url == "https://example.com")
    #expect(p.health.health[.iBeacon(Self.van7)]?.urlTxPower == -21)
  }

  /// TLM: "battery voltage [...] If not supported (for example in a USB-powered beacon) the value
  /// should be zeroed" (Eddystone-TLM specification).
  @Test func zeroBatteryIsNotSupported() {
    var p = pipeline()
    _ = p.ingest(Self.iBeacon(), at: .zero)
    let report = telemetry(p.ingest(Self.tlm(mv: 0, uptime: 1), at: .zero)).first
    #expect(report?.telemetry.batteryMillivolts == nil)
    #expect(p.health.health[.iBeacon(Self.van7)]?.batteryLow == false)
  }
}
