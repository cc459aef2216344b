import BeaconCore
import Testing

/// Eddystone UID, URL and TLM (google/eddystone protocol-specification.md and the per-frame
/// specifications under eddystone-uid/, eddystone-url/ and eddystone-tlm/).
@Suite struct EddystoneTests {
  static func uid(tx: Int8, _ namespace: String, _ instance: String) -> BeaconFrame {
    .eddystoneUID(
      EddystoneUIDFrame(txPower: tx, namespace: Fixture.bytes(namespace), instance: Fixture.bytes(instance)))
  }

  static func url(tx: Int8, _ url: String) -> BeaconFrame {
    .eddystoneURL(EddystoneURLFrame(txPower: tx, url: url))
  }

  // Sources, abbreviated:
  // - beacontools: citruz/beacontools, tests/test_parser.py.
  // - ABL: AltBeacon/android-beacon-library, lib/src/test/java/org/altbeacon/beacon/BeaconParserTest.java.
  static let vectors: [FrameVector] = [
    FrameVector(
      name: "UID, 20-byte frame with RFU", source: "beacontools test_eddystone_uid",
      hex: "0201060303aafe1716aafe00e3123456789012346789010000000000010000",
      expected: .frames([uid(tx: -29, "12345678901234678901", "000000000001")])),
    FrameVector(
      name: "UID, service UUID list says 0xFEAB", source: "beacontools test_bad_packets",
      // beacontools drops this packet because the Complete List of 16-bit UUIDs names 0xFEAB. The
      // parser here keys on the service data alone, as BlueZ's ServiceData carries no such list.
      hex: "0201060303abfe1716aafe00e3123456789012346789010000000000010000",
      expected: .frames([uid(tx: -29, "12345678901234678901", "000000000001")])),
    FrameVector(
      name: "UID, 18-byte frame without RFU (length 0x15)", source: "hand-built (Eddystone-UID field notes)",
      hex: "0201060303aafe1516aafe00ee8b0ca750095477cb3e77000000000042",
      expected: .frames([uid(tx: -18, "8b0ca750095477cb3e77", "000000000042")])),
    FrameVector(
      name: "URL https://github.com/citruz", source: "beacontools test_eddystone_url",
      hex: "0303aafe1316aafe10f8036769746875620063697472757a",
      expected: .frames([url(tx: -8, "https://github.com/citruz")])),
    FrameVector(
      name: "URL http://google.com/ with a local name and zero padding",
      source: "ABL testParseGattIdentifierThatRunsOverPduLength",
      hex: "0201060303aafe0d16aafe10e702676f6f676c65000c09526164426561636f6e2047"
        + String(repeating: "00", count: 28),
      expected: .frames([url(tx: -25, "http://google.com/")])),
    FrameVector(
      name: "URL made of expansion codes 0x02…0x08", source: "ABL testLongUrlBeaconIdentifier",
      hex: "0201060303aafe0d16aafe10e70102030405060708090a0b0c0d0e0f0102030405060708090a0b0c0d0e0f"
        + String(repeating: "00", count: 19),
      expected: .frames([url(tx: -25, "https://www..edu/.net/.info/.biz/.gov/.com.org")])),
    FrameVector(
      name: "TLM, 14 bytes", source: "hand-built (Eddystone-TLM layout)",
      hex: "0201060303aafe1116aafe20000bb8fe8000000064000004b0",
      expected: .frames([
        .eddystoneTLM(
          EddystoneTLMFrame(batteryMillivolts: 3000, temperature: -1.5, advertisementCount: 100, uptime: 120))
      ])),
    FrameVector(
      name: "Eddystone service data under its 128-bit UUID (AD type 0x21)", source: "hand-built",
      hex: "1f21fb349b5f8000008000100000aafe000020000bb8800000000064000004b0",
      expected: .frames([
        .eddystoneTLM(
          EddystoneTLMFrame(batteryMillivolts: 3000, temperature: nil, advertisementCount: 100, uptime: 120))
      ])),
    FrameVector(
      name: "Eddystone service data under its 32-bit UUID (AD type 0x20)", source: "hand-built",
      hex: "1920aafe000000e3123456789012346789010000000000010000",
      expected: .frames([uid(tx: -29, "12345678901234678901", "000000000001")])),
  ]

  static let rejections: [FrameVector] = [
    FrameVector(
      name: "UID of 17 bytes", source: "hand-built",
      hex: "1416aafe00e3123456789012346789010000000000", expected: .rejected(.eddystoneShortFrame)),
    FrameVector(
      name: "empty Eddystone service data", source: "hand-built", hex: "0316aafe",
      expected: .rejected(.eddystoneShortFrame)),
  ]

  @Test(arguments: vectors)
  func parsesVector(_ vector: FrameVector) {
    #expect(Fixture.outcome(vector.hex) == vector.expected)
  }

  @Test(arguments: rejections)
  func rejectsVector(_ vector: FrameVector) {
    #expect(Fixture.outcome(vector.hex) == vector.expected)
  }

  /// The TLM and encrypted-TLM service data of beacontools' test vectors, read on their own (their
  /// full packets end in stray bytes; see the table above).
  @Test func beacontoolsTelemetry() throws {
    let tlm = try BeaconFrameParser.parseEddystone(Fixture.bytes("20000b1813000000146700002ac4")).get()
    // beacontools: voltage 2840, temperature 19, advertising_count 5223, seconds_since_boot 10948
    // (SEC_CNT, in 0.1 s units).
    #expect(
      tlm
        == .eddystoneTLM(
          EddystoneTLMFrame(
            batteryMillivolts: 2840, temperature: 19, advertisementCount: 5223, uptime: 1094.8)))
    #expect(tlm.beaconID == nil)
    #expect(tlm.powerAt1m == nil)

    let encrypted = BeaconFrameParser.parseEddystone(
      Fixture.bytes("2001" + String(repeating: "41", count: 12) + "deadbeff"))
    // Encrypted TLM is well formed and not decoded here: ignored, not rejected.
    #expect(encrypted == .success(.ignored(IgnoredFrame(frameType: 0x20, version: 0x01))))
  }

  @Test(arguments: [
    // Eddystone-TLM: "signed 8.8 fixed-point notation"; 0x8000 (-128 °C) means not supported.
    ("1300", 19.0 as Double?), ("0180", 1.5), ("ff00", -1.0), ("fe80", -1.5), ("7fff", 127.99609375),
    ("8000", nil), ("8001", -127.99609375),
  ])
  func tlmTemperature(raw: String, celsius: Double?) throws {
    let frame = try BeaconFrameParser.parseEddystone(Fixture.bytes("20000000\(raw)0000000000000000")).get()
    guard case .eddystoneTLM(let tlm) = frame else {
      Issue.record("not a TLM frame: \(frame)")
      return
    }
    #expect(tlm.temperature == celsius)
  }

  @Test(arguments: [
    ("20", FrameRejection.Reason.eddystoneShortFrame), ("2000", .eddystoneShortFrame),
    ("20000bb8fe8000000064000000", .eddystoneShortFrame),
  ])
  func tlmRejections(hex: String, reason: FrameRejection.Reason) {
    #expect(BeaconFrameParser.parseEddystone(Fixture.bytes(hex)).rejectionReason == reason)
  }

  /// Decompression vectors of android-beacon-library's UrlBeaconUrlCompressorTest (scheme byte and
  /// encoded URL, as they appear after the frame type and TX power).
  @Test(arguments: [
    ("01" + "7261646975736e6574776f726b73" + "07", "https://www.radiusnetworks.com"),
    ("01" + "7261646975736e6574776f726b73" + "00", "https://www.radiusnetworks.com/"),
    ("02" + "676f6f676c65" + "00" + "313233", "http://google.com/123"),
    ("02" + "787878", "http://xxx"),
    ("00" + "666f72756d732e676f6f676c65" + "07", "http://www.forums.google.com"),
    ("00" + "666f72756d732e676f6f676c65" + "00", "http://www.forums.google.com/"),
    ("00" + "666f72756d732e676f6f676c65" + "00" + "3132332f343536", "http://www.forums.google.com/123/456"),
    ("02" + "676f6f676c65" + "0b", "http://google.info"),
    ("02" + "676f6f676c652e636f", "http://google.co"),
  ])
  func urlDecompression(encoded: String, expected: String) throws {
    let frame = try BeaconFrameParser.parseEddystone(Fixture.bytes("10e7" + encoded)).get()
    #expect(frame == Self.url(tx: -25, expected))
  }

  /// Every expansion code of the Eddystone-URL specification's table, and every scheme prefix.
  @Test(
    arguments: [
      (0x00, ".com/"), (0x01, ".org/"), (0x02, ".edu/"), (0x03, ".net/"), (0x04, ".info/"), (0x05, ".biz/"),
      (0x06, ".gov/"), (0x07, ".com"), (0x08, ".org"), (0x09, ".edu"), (0x0A, ".net"), (0x0B, ".info"),
      (0x0C, ".biz"), (0x0D, ".gov"),
    ] as [(UInt8, String)])
  func urlExpansionCode(code: UInt8, text: String) throws {
    let frame = try BeaconFrameParser.parseEddystone([0x10, 0x00, 0x03, 0x61, code, 0x7A]).get()
    #expect(frame == Self.url(tx: 0, "https://a\(text)z"))
  }

  @Test(
    arguments: [(0x00, "http://www."), (0x01, "https://www."), (0x02, "http://"), (0x03, "https://")]
      as [(UInt8, String)])
  func urlScheme(scheme: UInt8, prefix: String) throws {
    #expect(try BeaconFrameParser.parseEddystone([0x10, 0x00, scheme]).get() == Self.url(tx: 0, prefix))
  }

  /// Scheme bytes above 0x03 and the reserved URL bytes 0x0E…0x20 and 0x7F…0xFF.
  @Test(
    arguments: [[0x04], [0xFF], [0x02, 0x0E], [0x02, 0x20], [0x02, 0x61, 0x7F], [0x02, 0xFF]] as [[UInt8]])
  func urlRejectsReservedBytes(encoded: [UInt8]) {
    #expect(BeaconFrameParser.parseEddystone([0x10, 0x00] + encoded).rejectionReason == .eddystoneBadURL)
  }

  @Test func urlShortFrame() {
    #expect(BeaconFrameParser.parseEddystone([0x10, 0x00]).rejectionReason == .eddystoneShortFrame)
  }

  /// Eddystone-URL specification, "Tx Power Level" examples: 0x12 is +18 dBm and 0xEE is -18 dBm.
  /// Tx power is at 0 m, and 41 dB is the loss over the first metre.
  @Test(arguments: [(0x12, 18), (0xEE, -18)] as [(UInt8, Int)])
  func txPowerExamples(byte: UInt8, dBm: Int) throws {
    let frame = try BeaconFrameParser.parseEddystone([0x10, byte, 0x02, 0x61]).get()
    #expect(frame == Self.url(tx: Int8(dBm), "http://a"))
    #expect(frame.powerAt1m == dBm - 41)
    let uidFrame = try BeaconFrameParser.parseEddystone([0x00, byte] + [UInt8](repeating: 7, count: 16)).get()
    #expect(uidFrame.powerAt1m == dBm - 41)
  }

  @Test func uidIdentity() throws {
    // The namespace is the Eddystone-UID specification's "elided version 4 UUID" example.
    let frame = try BeaconFrameParser.parseEddystone(
      Fixture.bytes("00ee8b0ca750095477cb3e770000000000420000")
    ).get()
    #expect(
      frame.beaconID
        == .eddystone(
          namespace: Fixture.bytes("8b0ca750095477cb3e77"), instance: Fixture.bytes("000000000042")))
    #expect(frame.beaconID?.identity == nil)
  }

  @Test func blueZServiceData() throws {
    // Device1.ServiceData is keyed by the 128-bit UUID string.
    let ad = try Advertisement.parse(
      address: Fixture.address, rssi: -65, manufacturerData: [:],
      serviceData: [
        "0000feaa-0000-1000-8000-00805f9b34fb": Fixture.bytes("00e3123456789012346789010000000000010000"),
        "0000180f-0000-1000-8000-00805f9b34fb": [0x64],
      ]
    ).get()
    #expect(ad.serviceData.map(\.uuid) == [ServiceUUID(uuid16: 0x180F), .eddystone])
    #expect(
      BeaconFrameParser.parse(ad).frames == [Self.uid(tx: -29, "12345678901234678901", "000000000001")])
  }

  @Test func blueZServiceDataRejections() {
    let badKey = Advertisement.parse(
      address: Fixture.address, rssi: -65, manufacturerData: [:], serviceData: ["not-a-uuid": [0x00]])
    #expect(badKey.rejectionReason == .invalidEncoding)
    let tooLong = Advertisement.parse(
      address: Fixture.address, rssi: -65, manufacturerData: [:],
      serviceData: ["feaa": [UInt8](repeating: 0, count: 252)])
    #expect(tooLong.rejectionReason == .dataTooLong)
    let truncated = Advertisement.parse(
      address: Fixture.address, rssi: -65, manufacturerData: [:], serviceData: ["feaa": [0x00, 0xE3]])
    #expect(
      truncated.map { BeaconFrameParser.parse($0).rejections.map(\.reason) }
        == .success([.eddystoneShortFrame]))
  }
}
