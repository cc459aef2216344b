import BeaconCore
import Testing

/// AD structures (Core Specification Vol 3, Part C, 11) and the advertisement built from them.
@Suite struct AdvertisingDataTests {
  static let iBeaconAD = "1aff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002c5"

  @Test func splitsLegacyPDU() throws {
    let structures = try AdvertisingDataParser.structures(Fixture.bytes("020106" + Self.iBeaconAD)).get()
    #expect(structures.count == 2)
    #expect(structures.first == ADStructure(type: 0x01, data: [0x06]))
    #expect(structures.last?.type == 0xFF)
    #expect(structures.last?.data == Array(Fixture.bytes(Self.iBeaconAD)[2...]))
  }

  @Test(arguments: [
    ("", 0), ("00", 0), ("020106", 1), ("02010600", 1), ("020106" + String(repeating: "00", count: 28), 1),
    ("0109", 1),  // a structure with a type and no data
    ("0109" + "0109" + "020a00", 3),
  ])
  func acceptsWellFormed(hex: String, count: Int) throws {
    #expect(try AdvertisingDataParser.structures(Fixture.bytes(hex)).get().count == count)
  }

  /// Damage ends the data; the structures before it are kept (Core spec Vol 3 Part C 11 for a zero
  /// length octet; BlueZ src/eir.c `eir_parse` for a structure running past the end).
  @Test(arguments: [
    ("02", 0), ("0201", 0), ("02010603ff4c", 1), ("ff", 0), ("0201060002", 1), ("00020106", 0),
    ("020106000000000001", 1),
  ])
  func keepsStructuresBeforeDamage(hex: String, count: Int) throws {
    #expect(try AdvertisingDataParser.structures(Fixture.bytes(hex)).get().count == count)
  }

  // MARK: Extended advertising data (up to 255 bytes)

  @Test func extendedDataUpTo255Bytes() throws {
    // Hand-built: an iBeacon, a 200-character complete local name and padding, 255 bytes in all.
    let name = String(repeating: "b", count: 200)
    var bytes = Fixture.bytes("020106" + Self.iBeaconAD)
    bytes += [UInt8(name.utf8.count + 1), 0x09] + Array(name.utf8)
    bytes += [UInt8](repeating: 0, count: 255 - bytes.count)
    #expect(bytes.count == 255)
    let ad = try Advertisement.parse(address: Fixture.address, rssi: -50, adStructures: bytes).get()
    #expect(ad.localName == name)
    #expect(
      BeaconFrameParser.parse(ad).frames == [
        Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 2, power: -59)
      ])
  }

  @Test func oneStructureFillingAllOf255Bytes() throws {
    let bytes: [UInt8] = [0xFE, 0xFF, 0x34, 0x12] + [UInt8](repeating: 0xAB, count: 251)
    let ad = try Advertisement.parse(address: Fixture.address, rssi: -50, adStructures: bytes).get()
    #expect(
      ad.manufacturerData == [ManufacturerData(companyID: 0x1234, data: [UInt8](repeating: 0xAB, count: 251))]
    )
  }

  @Test(arguments: [256, 300, 1000])
  func rejectsOverLongData(count: Int) {
    // Even all-zero data: no report carries more than 255 bytes.
    let zeros = AdvertisingDataParser.structures([UInt8](repeating: 0, count: count))
    #expect(zeros.rejectionReason == .dataTooLong)
    let raw = Advertisement.parse(
      address: Fixture.address, rssi: -50, adStructures: [UInt8](repeating: 0x01, count: count))
    #expect(raw.rejectionReason == .dataTooLong)
  }

  // MARK: Advertisement fields

  @Test func readsTxPowerAndNames() throws {
    // TX power -8 dBm; a shortened name before a complete one: the complete name wins.
    let ad = try Advertisement.parse(
      address: Fixture.address, rssi: -50, adStructures: Fixture.bytes("020af8" + "03086162" + "050961626364")
    ).get()
    #expect(ad.txPower == -8)
    #expect(ad.localName == "abcd")
    #expect(ad.rssi == -50)
    #expect(ad.address == Fixture.address)

    let shortOnly = try Advertisement.parse(
      address: Fixture.address, rssi: nil, adStructures: Fixture.bytes("010a" + "03086162")
    ).get()
    #expect(shortOnly.txPower == nil)
    #expect(shortOnly.localName == "ab")
  }

  @Test func readsServiceDataOfEveryUUIDSize() throws {
    let ad = try Advertisement.parse(
      address: Fixture.address, rssi: -50,
      adStructures: Fixture.bytes(
        "04160f1864"  // battery service 0x180F, level 100
          + "0620785634120a"  // 32-bit UUID 0x12345678
          + "1221" + "efcdab8967452301efcdab8967452301" + "ff"  // 128-bit, little-endian on the air
      )
    ).get()
    #expect(
      ad.serviceData == [
        ServiceData(uuid: ServiceUUID(uuid16: 0x180F), data: [0x64]),
        ServiceData(uuid: ServiceUUID(uuid32: 0x1234_5678), data: [0x0A]),
        ServiceData(uuid: try #require(ServiceUUID("01234567-89ab-cdef-0123-456789abcdef")), data: [0xFF]),
      ])
  }

  // MARK: Service UUID strings (BlueZ ServiceData keys)

  @Test(arguments: [
    ("0000feaa-0000-1000-8000-00805f9b34fb", "0000feaa-0000-1000-8000-00805f9b34fb", 0xFEAA as UInt16?),
    ("0000FEAA-0000-1000-8000-00805F9B34FB", "0000feaa-0000-1000-8000-00805f9b34fb", 0xFEAA),
    ("feaa", "0000feaa-0000-1000-8000-00805f9b34fb", 0xFEAA),
    ("12345678", "12345678-0000-1000-8000-00805f9b34fb", nil),
    ("e2c56db5dffb48d2b060d0f5a71096e0", "e2c56db5-dffb-48d2-b060-d0f5a71096e0", nil),
  ])
  func parsesServiceUUID(text: String, canonical: String, uuid16: UInt16?) throws {
    let uuid = try #require(ServiceUUID(text))
    #expect(uuid.description == canonical)
    #expect(uuid.uuid16 == uuid16)
  }

  @Test(arguments: [
    "", "+abc", "-abc", "fea", "feaa ", "feaa0", "xyzw", "0x1234", "0000feaa-0000-1000-8000-00805f9b34f",
    "0000feaa-0000-1000-8000-00805f9b34fb0", "0000feaa:0000:1000:8000:00805f9b34fb",
  ])
  func rejectsServiceUUID(text: String) {
    #expect(ServiceUUID(text) == nil)
  }

  @Test func blueZDictionariesAreOrderedDeterministically() throws {
    let manufacturer: [UInt16: [UInt8]] = [0x0059: [1], 0x004C: [2], 0xFFFF: [3], 0x0118: [4]]
    let service: [String: [UInt8]] = [
      "0000feaa-0000-1000-8000-00805f9b34fb": [1], "180f": [2], "e2c56db5-dffb-48d2-b060-d0f5a71096e0": [3],
      "FEAA": [4],
    ]
    let first = try Advertisement.parse(
      address: Fixture.address, rssi: -1, manufacturerData: manufacturer, serviceData: service
    ).get()
    #expect(first.manufacturerData.map(\.companyID) == [0x004C, 0x0059, 0x0118, 0xFFFF])
    // Same UUID under two spellings: ordered by the key, so both keep their place.
    #expect(first.serviceData.map(\.data) == [[2], [1], [4], [3]])
    for _ in 0..<20 {
      let again = Advertisement.parse(
        address: Fixture.address, rssi: -1, manufacturerData: manufacturer, serviceData: service)
      #expect(again == .success(first))
    }
  }

  // MARK: Every rejection reason

  /// One input per reason, through the public entry points. The switch has no default, so a new
  /// reason does not compile until it has an example here.
  @Test(arguments: FrameRejection.Reason.allCases)
  func everyReasonHasAnExample(reason: FrameRejection.Reason) {
    let produced: FrameRejection.Reason?
    switch reason {
    case .dataTooLong:
      produced = AdvertisingDataParser.structures([UInt8](repeating: 0, count: 256)).rejectionReason
    case .iBeaconShortBody, .altBeaconShortBody, .eddystoneShortFrame, .eddystoneBadURL:
      let example: [FrameRejection.Reason: String] = [
        .iBeaconShortBody: "05ff4c000215",
        .altBeaconShortBody: "05ff1801beac",
        .eddystoneShortFrame: "0316aafe",
        .eddystoneBadURL: "0616aafe100004",
      ]
      guard case .rejected(let got) = Fixture.outcome(example[reason] ?? "") else {
        produced = nil
        break
      }
      produced = got
    case .malformedTail:
      produced = try? AdvertisingDataParser.split([0x02, 0x01, 0x06, 0x05, 0xFF]).get().tail?.reason
    case .invalidEncoding:
      produced =
        Advertisement.parse(
          address: Fixture.address, rssi: nil, manufacturerData: [:], serviceData: ["zz": []]
        )
        .rejectionReason
    case .eidReplay:
      // The pipeline's, not the parser's: an authenticator that calls the EID a replay.
      var pipeline = BeaconPipeline()
      pipeline.setAuthenticator(
        ScriptedAuthenticator(eids: [0x0102_0304_0506_0708: .replay(ScriptedAuthenticator.eid)]))
      let ad = Advertisement(
        address: Fixture.address,
        serviceData: [
          ServiceData(uuid: .eddystone, data: ScriptedAuthenticator.eidFrame(0x0102_0304_0506_0708))
        ])
      produced =
        pipeline.ingest(.sighting(ad), at: .zero).compactMap {
          if case .event(.rejected(_, let r)) = $0 { r.reason } else { nil }
        }.first
    case .rpaReplay:
      // The pipeline's too: an authenticator that calls the private address a replay.
      let address = BluetoothAddress("4A:00:00:00:00:01")!
      var pipeline = BeaconPipeline()
      pipeline.setAuthenticator(
        ScriptedAuthenticator(addresses: [address: .replay(ScriptedAuthenticator.rpa)]))
      produced =
        pipeline.ingest(.sighting(Advertisement(address: address)), at: .zero).compactMap {
          if case .event(.rejected(_, let r)) = $0 { r.reason } else { nil }
        }.first
    }
    #expect(produced == reason)
  }
}
