import BeaconCore
import Testing

/// iBeacon and AltBeacon frames, from raw advertising data and from BlueZ-style dictionaries.
@Suite struct FrameParserTests {
  // Sources, abbreviated in the tables:
  // - ABL: AltBeacon/android-beacon-library, lib/src/test/java/org/altbeacon/beacon/BeaconParserTest.java
  //   (and AltBeaconTest.java for the first vector). Where ABL only asserts "parsed" or "not parsed",
  //   the expected fields here are decoded by hand with the AltBeacon specification's layout.
  // - beacontools: citruz/beacontools, tests/test_parser.py (Python).
  // - AirLocate UUID: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 is the default UUID of Apple's AirLocate
  //   sample code; the frames around it are hand-built.
  static let vectors: [FrameVector] = [
    FrameVector(
      name: "iBeacon ABCD… 1/2 -8", source: "beacontools test_ibeacon",
      hex: "0201061aff4c0002154142434445464748494041424344454600010002f8",
      expected: .frames([Fixture.iBeacon("41424344-4546-4748-4940-414243444546", 1, 2, power: -8)])),
    FrameVector(
      name: "iBeacon Cypress CYALKIT-E02 (sensor values in the minor)",
      source: "beacontools test_cypress_beacon",
      hex: "0201041aff4c0002150005000100001000800000805f9b013100026c66c3",
      expected: .frames([Fixture.iBeacon("00050001-0000-1000-8000-00805F9B0131", 2, 0x6C66, power: -61)])),
    FrameVector(
      name: "iBeacon AirLocate UUID, legacy PDU", source: "hand-built (AirLocate UUID)",
      hex: "0201061aff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002c5",
      expected: .frames([Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 2, power: -59)])),
    FrameVector(
      name: "iBeacon major/minor big-endian, power -128", source: "hand-built (AirLocate UUID)",
      hex: "1aff4c000215e2c56db5dffb48d2b060d0f5a71096e0fffe123480",
      expected: .frames([Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 0xFFFE, 0x1234, power: -128)]
      )),
    FrameVector(
      name: "AltBeacon 2F234454… 1/2", source: "ABL testReEncodesBeacon, AltBeaconTest.testRecognizeBeacon",
      hex: "02011a1bff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509",
      expected: .frames([
        Fixture.altBeacon(
          company: 0x0118, "2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6", 1, 2, power: -59, reserved: 9)
      ])),
    FrameVector(
      name: "AltBeacon with trailing zero padding",
      source: "ABL testRecognizeBeaconWithFormatSpecifyingManufacturer",
      hex: "02011a1bff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509000000",
      expected: .frames([
        Fixture.altBeacon(
          company: 0x0118, "2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6", 1, 2, power: -59, reserved: 9)
      ])),
    FrameVector(
      name: "AltBeacon, company 0x00E0 (issue 229)", source: "ABL testParseProblematicBeaconFromIssue229",
      hex: "0201061bffe000beac7777772e626c756b692e636f6d000100010001abaa000000",
      expected: .frames([
        Fixture.altBeacon(
          company: 0x00E0, "7777772E-626C-756B-692E-636F6D000100", 0x0100, 0x01AB, power: -86, reserved: 0)
      ])),
    FrameVector(
      name: "AltBeacon, company 0xBBAA, AirLocate UUID, 62 bytes with padding",
      source: "ABL testRecognizeBeaconCapturedManufacturer",
      hex: "0201061bffaabbbeace2c56db5dffb48d2b060d0f5a71096e000010004c500"
        + String(repeating: "00", count: 31),
      expected: .frames([
        Fixture.altBeacon(
          company: 0xBBAA, "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 4, power: -59, reserved: 0)
      ])),
    FrameVector(
      name: "custom layout 0x1234 is not a beacon frame", source: "ABL testRecognizeBeacon",
      hex: "02011a1aff180112342f234454cf6d4a0fadf2f4911ba9ffa600010002c5",
      expected: .frames([])),
    FrameVector(
      name: "Apple manufacturer data of another type (0x10, Nearby) is not a beacon", source: "hand-built",
      hex: "0201060aff4c001005031c0f5a2d",
      expected: .frames([])),
    FrameVector(
      name: "iBeacon and AltBeacon in one PDU", source: "hand-built",
      hex: "1aff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002c5"
        + "1bff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509",
      expected: .frames([
        Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 2, power: -59),
        Fixture.altBeacon(
          company: 0x0118, "2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6", 1, 2, power: -59, reserved: 9),
      ])),
    FrameVector(
      name: "empty advertising data", source: "beacontools test_bad_packets",
      hex: "", expected: .frames([])),
    FrameVector(
      name: "flags only", source: "hand-built", hex: "020106", expected: .frames([])),
  ]

  static let rejections: [FrameVector] = [
    FrameVector(
      name: "AltBeacon AD length 0x16 ends inside id2",
      source: "ABL testParseManufacturerIdentifierThatRunsOverPduLength",
      hex: "02011a16ff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509000000",
      expected: .rejected(.altBeaconShortBody)),
    FrameVector(
      name: "AltBeacon with one byte too many", source: "hand-built",
      hex: "1cff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c50900",
      expected: .rejected(.altBeaconShortBody)),
    FrameVector(
      name: "AltBeacon code alone", source: "hand-built", hex: "05ff1801beac",
      expected: .rejected(.altBeaconShortBody)),
    FrameVector(
      name: "iBeacon header with a 20-byte body", source: "hand-built",
      hex: "19ff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002",
      expected: .rejected(.iBeaconShortBody)),
    FrameVector(
      name: "iBeacon header alone", source: "hand-built", hex: "05ff4c000215",
      expected: .rejected(.iBeaconShortBody)),
    FrameVector(
      name: "iBeacon type byte without length", source: "hand-built", hex: "04ff4c0002",
      expected: .rejected(.iBeaconShortBody)),
    FrameVector(
      name: "iBeacon with a wrong length byte (0x16) and 22 bytes", source: "hand-built",
      hex: "1bff4c000216e2c56db5dffb48d2b060d0f5a71096e000010002c500",
      expected: .rejected(.iBeaconShortBody)),
  ]

  @Test(arguments: vectors)
  func parsesVector(_ vector: FrameVector) {
    #expect(Fixture.outcome(vector.hex) == vector.expected)
  }

  @Test(arguments: rejections)
  func rejectsVector(_ vector: FrameVector) {
    #expect(Fixture.outcome(vector.hex) == vector.expected)
  }

  @Test func rejectionKeepsOtherFrames() throws {
    // A malformed AltBeacon next to a good iBeacon: the iBeacon is still found, and the AltBeacon is
    // reported, so one bad structure does not hide a beacon.
    let result = try Fixture.parse(
      "1aff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002c5" + "05ff1801beac"
    ).get()
    #expect(result.frames == [Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 2, power: -59)])
    #expect(result.rejections.map(\.reason) == [.altBeaconShortBody])
    let detail = try #require(result.rejections.first?.detail)
    #expect(detail.contains("2 bytes"))
  }

  @Test func identityAndPower() {
    let iBeacon = Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 7, 9, power: -59)
    let identity = BeaconIdentity(
      uuid: Fixture.uuid("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"), major: 7, minor: 9)
    #expect(iBeacon.beaconID == .iBeacon(identity))
    #expect(iBeacon.beaconID?.identity == identity)
    #expect(iBeacon.powerAt1m == -59)
    let alt = Fixture.altBeacon(
      company: 0x0118, "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 7, 9, power: -60, reserved: 0)
    #expect(alt.beaconID == .altBeacon(identity))
    #expect(alt.powerAt1m == -60)
    // The same UUID/major/minor as iBeacon and as AltBeacon are different beacons.
    #expect(alt.beaconID != iBeacon.beaconID)
  }

  // MARK: BlueZ Device1 dictionaries

  @Test func blueZManufacturerData() throws {
    // Device1.ManufacturerData {0x004C: <02 15 …>}: the same bytes as after the company ID on the air.
    let ad = try Advertisement.parse(
      address: Fixture.address, rssi: -70,
      manufacturerData: [
        0x0118: Fixture.bytes("beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509"),
        0x004C: Fixture.bytes("0215e2c56db5dffb48d2b060d0f5a71096e000010002c5"),
      ],
      serviceData: [:]
    ).get()
    #expect(ad.manufacturerData.map(\.companyID) == [0x004C, 0x0118])
    #expect(
      BeaconFrameParser.parse(ad).frames == [
        Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 2, power: -59),
        Fixture.altBeacon(
          company: 0x0118, "2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6", 1, 2, power: -59, reserved: 9),
      ])
  }

  @Test func blueZTruncatedManufacturerData() throws {
    let ad = try Advertisement.parse(
      address: Fixture.address, rssi: nil, manufacturerData: [0x004C: [0x02, 0x15, 0xE2]], serviceData: [:]
    ).get()
    #expect(BeaconFrameParser.parse(ad).rejections.map(\.reason) == [.iBeaconShortBody])
    #expect(ad.rssi == nil)
  }

  @Test func blueZOversizeManufacturerData() {
    let result = Advertisement.parse(
      address: Fixture.address, rssi: -70, manufacturerData: [0x004C: [UInt8](repeating: 1, count: 252)],
      serviceData: [:])
    #expect(result.rejectionReason == .dataTooLong)
    let largest = Advertisement.parse(
      address: Fixture.address, rssi: -70, manufacturerData: [0x004C: [UInt8](repeating: 1, count: 251)],
      serviceData: [:])
    #expect(largest.rejectionReason == nil)
  }

  @Test func parseManufacturerDataDirectly() throws {
    #expect(BeaconFrameParser.parseManufacturerData(ManufacturerData(companyID: 0x004C, data: [])) == nil)
    #expect(
      BeaconFrameParser.parseManufacturerData(ManufacturerData(companyID: 0x0059, data: [0x02, 0x15])) == nil)
    let frame = try #require(
      BeaconFrameParser.parseManufacturerData(
        ManufacturerData(
          companyID: 0x004C, data: Fixture.bytes("0215e2c56db5dffb48d2b060d0f5a71096e0000100027f"))))
    #expect(try frame.get() == Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 2, power: 127))
  }
}

extension Result where Failure == FrameRejection {
  var rejectionReason: FrameRejection.Reason? {
    if case .failure(let rejection) = self { return rejection.reason }
    return nil
  }
}
