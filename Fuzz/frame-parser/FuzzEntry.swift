// libFuzzer harness for the frame parsers, linked by Fuzz/run.sh against the BeaconCore module; its
// seeds (Fuzz/frame-parser/corpus) are advertisements from Tests/BeaconCoreTests' vectors.
@testable import BeaconCore
//
// Beyond "no crash, no out-of-bounds read" (ASan), it checks the properties the unit tests check:
// the AD structures are consecutive sub-slices of the input, ending at the end, at a zero length
// octet or at a structure that runs past the end (Core spec Vol 3 Part C 11; BlueZ eir_parse), every
// step is deterministic, and frames found in manufacturer data encode back to the same bytes.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameParsers(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
  checkStructures(bytes)
  checkAdvertisement(bytes)
  // The same bytes as Eddystone service data and as manufacturer data, straight into the frame
  // parsers (the BlueZ backend hands them over this way).
  _ = BeaconFrameParser.parseEddystone(bytes)
  if bytes.count >= 2 {
    let company = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
    let manufacturer = ManufacturerData(companyID: company, data: Array(bytes[2...]))
    let frame = BeaconFrameParser.parseManufacturerData(manufacturer)
    precondition(frame == BeaconFrameParser.parseManufacturerData(manufacturer), "not deterministic")
    if case .success(let found) = frame, let encoded = encode(found) {
      precondition(encoded == manufacturer, "frame does not encode back to its bytes")
    }
  }
  return 0
}

func checkStructures(_ bytes: [UInt8]) {
  let result = AdvertisingDataParser.structures(bytes)
  precondition(result == AdvertisingDataParser.structures(bytes), "not deterministic")
  guard case .success(let structures) = result else {
    precondition(
      bytes.count > AdvertisingDataParser.maximumLength, "rejected data of an advertisement's length")
    return
  }
  precondition(bytes.count <= AdvertisingDataParser.maximumLength)
  var offset = 0
  for s in structures {
    let end = offset + 2 + s.data.count
    precondition(end <= bytes.count, "structure past the end")
    precondition(Int(bytes[offset]) == s.data.count + 1 && bytes[offset + 1] == s.type)
    precondition(Array(bytes[(offset + 2)..<end]) == s.data, "data is not the input's sub-slice")
    offset = end
  }
  precondition(
    offset == bytes.count || bytes[offset] == 0 || Int(bytes[offset]) > bytes.count - offset - 1,
    "stopped before the end without a zero length octet or a structure past the end")
}

func checkAdvertisement(_ bytes: [UInt8]) {
  let address = BluetoothAddress(bytes: [0xC0, 0xFF, 0xEE, 0, 0, 1])!
  let ad = Advertisement.parse(address: address, rssi: -60, adStructures: bytes)
  precondition(
    ad == Advertisement.parse(address: address, rssi: -60, adStructures: bytes), "not deterministic")
  guard case .success(let advertisement) = ad else { return }
  let result = BeaconFrameParser.parse(advertisement)
  precondition(result == BeaconFrameParser.parse(advertisement), "not deterministic")
  for frame in result.frames {
    if let encoded = encode(frame) {
      precondition(advertisement.manufacturerData.contains(encoded), "frame does not encode back")
    }
  }
}

/// iBeacon and AltBeacon frames as manufacturer data, field by field from the specifications.
func encode(_ frame: BeaconFrame) -> ManufacturerData? {
  func body(_ identity: BeaconIdentity) -> [UInt8] {
    withUnsafeBytes(of: identity.uuid.uuid) { Array($0) }
      + [UInt8(identity.major >> 8), UInt8(identity.major & 0xFF)]
      + [UInt8(identity.minor >> 8), UInt8(identity.minor & 0xFF)]
  }
  switch frame {
  case .iBeacon(let f):
    return ManufacturerData(
      companyID: 0x004C, data: [0x02, 0x15] + body(f.identity) + [UInt8(bitPattern: f.measuredPower)])
  case .altBeacon(let f):
    return ManufacturerData(
      companyID: f.companyID,
      data: [0xBE, 0xAC] + body(f.identity) + [UInt8(bitPattern: f.referenceRSSI)]
        + (f.reserved.map { [$0] } ?? []))
  case .eddystoneUID, .eddystoneEID, .eddystoneURL, .eddystoneTLM, .ignored:
    return nil
  }
}
