import BeaconCore
import Testing

/// Issue 17: the advertising data rules of the Core specification and the tolerance of the
/// reference stacks (BlueZ, the Linux kernel, Android, android-beacon-library), each as a byte
/// table whose vectors name their source.
///
/// Sources, abbreviated:
/// - Core §11: Core Specification 5.4, Vol 3, Part C, 11 ("Advertising and Scan Response Data
///   Format"): a zero length octet ends the significant part.
/// - eir_parse: BlueZ src/eir.c `eir_parse` ("Check for the end of EIR", "Do not continue EIR Data
///   parsing if got incorrect length") and `eir_parse_msd` / `eir_parse_uuid*_data` (too short:
///   the structure is skipped).
/// - ScanRecord: Android `android.bluetooth.le.ScanRecord.parseFromBytes` (`if (length == 0)
///   break;`).
/// - ABL: AltBeacon/android-beacon-library BeaconParserTest.java; PR #230 "allow missing data
///   fields".
/// - beacontools: citruz/beacontools tests/test_parser.py.
/// - Eddystone: google/eddystone protocol-specification.md, eddystone-eid/eid-computation.md
///   ("Encrypted TLM", 0x20 version 0x01); Find Hub: Google's Find Hub Network accessory
///   specification (frame types 0x40 and 0x41 under 0xFEAA).
/// - own: written here from the specification named with it.
@Suite struct ReferenceStackRulesTests {
  static let iBeaconAD = "1aff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002c5"
  static let iBeacon = Fixture.iBeacon("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 2, power: -59)
  static let uidAD = "1716aafe00e3123456789012346789010000000000010000"
  static let uid = EddystoneTests.uid(tx: -29, "12345678901234678901", "000000000001")

  static func ignored(_ type: UInt8, version: UInt8? = nil) -> BeaconFrame {
    .ignored(IgnoredFrame(frameType: type, version: version))
  }

  // MARK: A zero length octet ends the advertising data

  static let zeroLength: [FrameVector] = [
    FrameVector(
      name: "Eddystone-UID, then a zero length octet and an iBeacon", source: "own, Core §11; ScanRecord",
      hex: "0201060303aafe" + uidAD + "00" + iBeaconAD, expected: .frames([uid])),
    FrameVector(
      name: "iBeacon, then 00 ff (non-zero after the zero length octet)", source: "own, Core §11; eir_parse",
      hex: iBeaconAD + "00ff", expected: .frames([iBeacon])),
    FrameVector(
      name: "zero length octet first: nothing after it is read", source: "own, Core §11; ScanRecord",
      hex: "00" + iBeaconAD, expected: .frames([])),
    FrameVector(
      name: "flags, zero length, then 10 ff", source: "own (was the malformed-frames scenario's vector)",
      hex: "0201060010ff", expected: .frames([])),
  ]

  // MARK: A structure running past the end keeps the ones before it

  static let pastEnd: [FrameVector] = [
    FrameVector(
      name: "TLM followed by a stray byte 0xE4", source: "beacontools test_eddystone_tlm; eir_parse",
      hex: "0201060303aafe1116aafe20000b1813000000146700002ac4e4",
      expected: .frames([
        .eddystoneTLM(
          EddystoneTLMFrame(
            batteryMillivolts: 2840, temperature: 19, advertisementCount: 5223, uptime: 1094.8))
      ])),
    FrameVector(
      name: "TLM whose AD length 0x15 runs past the end",
      source: "ABL testReEncodesBeaconForEddystoneTelemetry; eir_parse",
      hex: "0201060303aafe1516aafe2001021203130414243405152535", expected: .frames([])),
    FrameVector(
      name: "iBeacon, then manufacturer data whose length runs past the end", source: "own, eir_parse",
      hex: iBeaconAD + "05ff0100", expected: .frames([iBeacon])),
    FrameVector(
      name: "Eddystone-UID, then a structure claiming 255 bytes", source: "own, eir_parse",
      hex: uidAD + "ff09414243", expected: .frames([uid])),
    FrameVector(
      name: "iBeacon AD length 0x1B, one byte past the end", source: "own, eir_parse",
      hex: "0201061bff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002c5", expected: .frames([])),
    FrameVector(
      name: "ASCII \"0000000\"", source: "beacontools test_bad_packets", hex: "30303030303030",
      expected: .frames([])),
    FrameVector(
      name: "flags, then a service UUID list cut after its header", source: "beacontools test_bad_packets",
      hex: "0201060303", expected: .frames([])),
  ]

  // MARK: A structure too short for its type is skipped

  static let tooShort: [FrameVector] = [
    FrameVector(
      name: "manufacturer data with one byte of company ID, then an iBeacon",
      source: "own, eir_parse_msd (len < 2)", hex: "02ff4c" + iBeaconAD, expected: .frames([iBeacon])),
    FrameVector(
      name: "manufacturer data with no company ID", source: "own, eir_parse_msd", hex: "01ff",
      expected: .frames([])),
    FrameVector(
      name: "16-bit service data without its UUID, then an Eddystone-UID",
      source: "own, eir_parse_uuid16_data (len < 2)", hex: "0216aa" + uidAD, expected: .frames([uid])),
    FrameVector(
      name: "32-bit service data without its UUID", source: "own, eir_parse_uuid32_data (len < 4)",
      hex: "0420aafe00", expected: .frames([])),
    FrameVector(
      name: "128-bit service data without its UUID", source: "own, eir_parse_uuid128_data (len < 16)",
      hex: "1021fb349b5f8000008000100000aafe00", expected: .frames([])),
  ]

  // MARK: Eddystone frames not decoded here are ignored kinds, not malformed

  static let ignoredKinds: [(FrameVector, String)] = [
    (
      FrameVector(
        name: "EID (0x30) a byte longer than the frame", source: "own, beacontools test_eddystone_eid + 00",
        hex: "0201060303aafe0e16aafe30e34549445f7465737400", expected: .frames([ignored(0x30)])),
      "eddystoneEID"
    ),
    (
      FrameVector(
        name: "frame type 0x01 (low nibble reserved)", source: "beacontools test_bad_packets",
        hex: "0201060303aafe1716aafe01e3123456789012346789010000000000010000",
        expected: .frames([ignored(0x01)])),
      "eddystone0x01"
    ),
    (
      FrameVector(
        name: "encrypted TLM: 0x20 0x01, 12 bytes ETLM, salt, MIC",
        source: "own, Eddystone eid-computation.md",
        hex: "0201060303aafe1516aafe2001" + String(repeating: "a5", count: 12) + "1234abcd",
        expected: .frames([ignored(0x20, version: 0x01)])),
      "eddystoneTLMEncrypted"
    ),
    (
      FrameVector(
        name: "TLM version 0x02 (unknown)", source: "own, Eddystone-TLM (versions 0x00, 0x01 defined)",
        hex: "0516aafe2002", expected: .frames([ignored(0x20, version: 0x02)])),
      "eddystoneTLMv0x02"
    ),
    (
      FrameVector(
        name: "Find Hub 0x40: 20-byte EID and hashed flags", source: "own, Find Hub accessory spec",
        hex: "0201060303aafe1916aafe40" + String(repeating: "5a", count: 20) + "01",
        expected: .frames([ignored(0x40)])),
      "eddystoneFindHub"
    ),
    (
      FrameVector(
        name: "Find Hub 0x41 (unwanted tracking protection mode)", source: "own, Find Hub accessory spec",
        hex: "1916aafe41" + String(repeating: "5a", count: 20) + "81", expected: .frames([ignored(0x41)])),
      "eddystoneFindHub"
    ),
    (
      FrameVector(
        name: "frame type 0x50 (not assigned)", source: "own, Eddystone protocol-specification.md",
        hex: "0416aafe50", expected: .frames([ignored(0x50)])),
      "eddystone0x50"
    ),
  ]

  // MARK: AltBeacon without its reserved byte is accepted

  static let altBeaconMissingReserved: [FrameVector] = [
    FrameVector(
      name: "AltBeacon missing the reserved byte (AD length 0x1A)",
      source: "ABL testParsesBeaconMissingDataField (PR #230)",
      hex: "02011a1aff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c5000000",
      expected: .frames([
        .altBeacon(
          AltBeaconFrame(
            companyID: 0x0118,
            identity: BeaconIdentity(
              uuid: Fixture.uuid("2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6"), major: 1, minor: 2),
            referenceRSSI: -59, reserved: nil))
      ])),
    FrameVector(
      name: "AltBeacon 23 bytes, AirLocate UUID, company 0xBBAA", source: "own, AltBeacon spec 1.0 layout",
      hex: "1affaabbbeace2c56db5dffb48d2b060d0f5a71096e000010004c5",
      expected: .frames([
        .altBeacon(
          AltBeaconFrame(
            companyID: 0xBBAA,
            identity: BeaconIdentity(
              uuid: Fixture.uuid("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"), major: 1, minor: 4),
            referenceRSSI: -59, reserved: nil))
      ])),
    FrameVector(
      name: "AltBeacon 22 bytes (cut into the reference RSSI) is still rejected",
      source: "own, AltBeacon spec 1.0",
      hex: "19ffaabbbeace2c56db5dffb48d2b060d0f5a71096e000010004", expected: .rejected(.altBeaconShortBody)),
  ]

  static var all: [FrameVector] {
    zeroLength + pastEnd + tooShort + ignoredKinds.map(\.0) + altBeaconMissingReserved
  }

  @Test(arguments: zeroLength) func zeroLengthEndsTheData(_ v: FrameVector) {
    #expect(Fixture.outcome(v.hex) == v.expected)
  }

  @Test(arguments: pastEnd) func structurePastTheEndKeepsTheOnesBefore(_ v: FrameVector) {
    #expect(Fixture.outcome(v.hex) == v.expected)
  }

  @Test(arguments: tooShort) func structureTooShortIsSkipped(_ v: FrameVector) {
    #expect(Fixture.outcome(v.hex) == v.expected)
  }

  @Test(arguments: ignoredKinds) func undecodedEddystoneIsAnIgnoredKind(_ v: FrameVector, kind: String) throws
  {
    #expect(Fixture.outcome(v.hex) == v.expected)
    let result = try Fixture.parse(v.hex).get()
    #expect(result.rejections.isEmpty)
    guard case .ignored(let frame) = result.frames.first else {
      Issue.record("no ignored frame")
      return
    }
    #expect(frame.kind == kind)
    #expect(BeaconFrame.ignored(frame).beaconID == nil)
  }

  /// An EID frame is decoded (its identity is its pairing's, which only an authenticator names).
  @Test func eidFrameIsDecoded() throws {
    let result = try Fixture.parse("0201060303aafe0d16aafe30e34549445f74657374").get()
    #expect(
      Array(result.frames) == [.eddystoneEID(EddystoneEIDFrame(txPower: -29, eid: 0x4549_445f_7465_7374))])
    #expect(result.frames.first?.beaconID == nil)
    #expect(result.frames.first?.powerAt1m == -29 - 41)
  }

  @Test(arguments: altBeaconMissingReserved) func altBeaconReservedByteMayBeMissing(_ v: FrameVector) {
    #expect(Fixture.outcome(v.hex) == v.expected)
  }

  /// The HCI path (raw AD structures) and the BlueZ path (Device1's dictionaries, as bluetoothd's
  /// `eir_parse` builds them from the same bytes) give the same beacons for every vector above.
  @Test(arguments: all) func hciAndBlueZPathsAgree(_ v: FrameVector) throws {
    let (manufacturer, service) = Self.bluezDictionaries(Fixture.bytes(v.hex))
    let ad = try Advertisement.parse(
      address: Fixture.address, rssi: -60, manufacturerData: manufacturer, serviceData: service
    ).get()
    let viaBlueZ = BeaconFrameParser.parse(ad)
    let viaHCI = try Fixture.parse(v.hex).get()
    #expect(Set(viaBlueZ.frames) == Set(viaHCI.frames))
    #expect(viaBlueZ.frames.count == viaHCI.frames.count)
    #expect(viaBlueZ.rejections.map(\.reason) == viaHCI.rejections.map(\.reason))
  }

  /// BlueZ src/eir.c `eir_parse`, step by step (the loop, its two breaks, and the length checks of
  /// `eir_parse_msd` and `eir_parse_uuid{16,32,128}_data`), producing what Device1 exposes as
  /// ManufacturerData and ServiceData. Written here from BlueZ's code, independent of the parser.
  static func bluezDictionaries(_ eir: [UInt8]) -> ([UInt16: [UInt8]], [String: [UInt8]]) {
    var manufacturer: [UInt16: [UInt8]] = [:]
    var service: [String: [UInt8]] = [:]
    var len = 0
    while len < eir.count - 1 {
      let start = len
      let fieldLen = Int(eir[start])
      if fieldLen == 0 { break }  // "Check for the end of EIR"
      len += fieldLen + 1
      if len > eir.count { break }  // "Do not continue EIR Data parsing if got incorrect length"
      let data = Array(eir[(start + 2)..<(start + 1 + fieldLen)])
      switch eir[start + 1] {
      case 0xFF where data.count >= 2:
        manufacturer[UInt16(data[0]) | UInt16(data[1]) << 8] = Array(data[2...])
      case 0x16 where data.count >= 2:
        service["0000\(Hex.encode([data[1], data[0]]))-0000-1000-8000-00805f9b34fb"] = Array(data[2...])
      case 0x20 where data.count >= 4:
        service["\(Hex.encode([data[3], data[2], data[1], data[0]]))-0000-1000-8000-00805f9b34fb"] =
          Array(data[4...])
      case 0x21 where data.count >= 16:
        let u = Hex.encode(Array(data[0..<16].reversed()))
        let key =
          [u.prefix(8), u.dropFirst(8).prefix(4), u.dropFirst(12).prefix(4), u.dropFirst(16).prefix(4)]
          .joined(separator: "-") + "-" + u.dropFirst(20)
        service[key] = Array(data[16...])
      default:
        break
      }
    }
    return (manufacturer, service)
  }
}
