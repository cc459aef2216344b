#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// What one advertisement held: the beacon frames found, and a rejection for each structure that
/// looked like a beacon frame but was malformed. An advertisement with neither is simply not a
/// beacon.
public struct FrameParseResult: Hashable, Sendable {
  public var frames: [BeaconFrame] = []
  public var rejections: [FrameRejection] = []

  public init(frames: [BeaconFrame] = [], rejections: [FrameRejection] = []) {
    self.frames = frames
    self.rejections = rejections
  }
}

/// Finds iBeacon, AltBeacon and Eddystone frames in an advertisement.
public enum BeaconFrameParser {
  /// Apple's company identifier (Bluetooth SIG assigned numbers).
  public static let appleCompanyID: UInt16 = 0x004C
  /// iBeacon type and length bytes after Apple's company ID.
  static let iBeaconType: UInt8 = 0x02
  static let iBeaconLength: UInt8 = 0x15
  /// AltBeacon beacon code, big-endian on the air (AltBeacon specification 1.0).
  static let altBeaconCode: [UInt8] = [0xBE, 0xAC]
  /// Manufacturer data length of an AltBeacon after the company ID.
  static let altBeaconDataLength = 24

  public static func parse(_ ad: Advertisement) -> FrameParseResult {
    var result = FrameParseResult()
    for m in ad.manufacturerData {
      switch parseManufacturerData(m) {
      case .none: continue
      case .some(.success(let frame)): append(frame, to: &result.frames)
      case .some(.failure(let rejection)): result.rejections.append(rejection)
      }
    }
    for s in ad.serviceData where s.uuid == .eddystone {
      switch parseEddystone(s.data) {
      case .success(let frame): append(frame, to: &result.frames)
      case .failure(let rejection): result.rejections.append(rejection)
      }
    }
    return result
  }

  /// Almost every advertisement holds one frame: the first is stored as a one-element literal,
  /// which allocates exactly one element's storage, rather than through `append`'s growth path
  /// (which also asks the allocator for the block's usable size).
  @inline(__always)
  private static func append(_ frame: BeaconFrame, to frames: inout [BeaconFrame]) {
    if frames.isEmpty { frames = [frame] } else { frames.append(frame) }
  }

  /// nil when the data is not a beacon frame at all.
  public static func parseManufacturerData(_ m: ManufacturerData) -> Result<BeaconFrame, FrameRejection>? {
    let d = m.data
    if m.companyID == appleCompanyID, d.count >= 1, d[0] == iBeaconType {
      // Apple uses type 0x02 for iBeacon only; a different length byte is a malformed frame.
      guard d.count >= 2 else {
        return .failure(FrameRejection(.iBeaconShortBody, "iBeacon type byte without a length byte or body"))
      }
      guard d[1] == iBeaconLength, d.count == 2 + Int(iBeaconLength) else {
        return .failure(
          FrameRejection(
            .iBeaconShortBody,
            "iBeacon header with length byte 0x\(Hex.byte(d[1])) and a \(d.count - 2)-byte body; "
              + "expected 0x15 and 21"))
      }
      let identity = BeaconIdentity(uuid: uuid(d, at: 2), major: be16(d, at: 18), minor: be16(d, at: 20))
      return .success(.iBeacon(IBeaconFrame(identity: identity, measuredPower: Int8(bitPattern: d[22]))))
    }
    if d.count >= 2, d[0] == altBeaconCode[0], d[1] == altBeaconCode[1] {
      // After the company ID: the code (2), the beacon ID (20), the reference RSSI (1) and the
      // reserved byte (1), 24 bytes in all (AltBeacon specification 1.0: AD length 0x1B).
      guard d.count == altBeaconDataLength else {
        return .failure(
          FrameRejection(
            .altBeaconShortBody,
            "AltBeacon code with \(d.count) bytes of manufacturer data; expected \(altBeaconDataLength)"))
      }
      let identity = BeaconIdentity(uuid: uuid(d, at: 2), major: be16(d, at: 18), minor: be16(d, at: 20))
      return .success(
        .altBeacon(
          AltBeaconFrame(
            companyID: m.companyID, identity: identity, referenceRSSI: Int8(bitPattern: d[22]),
            reserved: d[23])))
    }
    return nil
  }

  /// Parses the service data of service 0xFEAA (Eddystone protocol specification).
  public static func parseEddystone(_ d: [UInt8]) -> Result<BeaconFrame, FrameRejection> {
    guard let type = d.first else {
      return .failure(FrameRejection(.eddystoneShortFrame, "empty Eddystone service data"))
    }
    switch type {
    case 0x00:
      // UID: type, tx power, 10-byte namespace, 6-byte instance, 2 reserved bytes (which some
      // beacons omit, so 18 bytes is accepted).
      guard d.count >= 18 else {
        return .failure(
          FrameRejection(.eddystoneShortFrame, "Eddystone-UID of \(d.count) bytes; expected 18 or 20"))
      }
      return .success(
        .eddystoneUID(
          EddystoneUIDFrame(
            txPower: Int8(bitPattern: d[1]), namespace: Array(d[2..<12]), instance: Array(d[12..<18]))))
    case 0x10:
      guard d.count >= 3 else {
        return .failure(
          FrameRejection(.eddystoneShortFrame, "Eddystone-URL of \(d.count) bytes; expected at least 3"))
      }
      guard let url = decodeURL(scheme: d[2], body: Array(d[3...])) else {
        return .failure(
          FrameRejection(.eddystoneBadURL, "Eddystone-URL with scheme byte \(d[2]) or bad URL bytes"))
      }
      return .success(.eddystoneURL(EddystoneURLFrame(txPower: Int8(bitPattern: d[1]), url: url)))
    case 0x20:
      guard d.count >= 2 else {
        return .failure(FrameRejection(.eddystoneShortFrame, "Eddystone-TLM of \(d.count) bytes"))
      }
      guard d[1] == 0x00 else {
        return .failure(
          FrameRejection(.eddystoneUnsupportedTLM, "Eddystone-TLM version \(d[1]) (only 0 is read)"))
      }
      guard d.count >= 14 else {
        return .failure(
          FrameRejection(.eddystoneShortFrame, "Eddystone-TLM of \(d.count) bytes; expected 14"))
      }
      let rawTemp = be16(d, at: 4)
      let temperature: Double? = rawTemp == 0x8000 ? nil : Double(Int16(bitPattern: rawTemp)) / 256
      let tlm = EddystoneTLMFrame(
        batteryMillivolts: be16(d, at: 2), temperature: temperature, advertisementCount: be32(d, at: 6),
        uptime: Double(be32(d, at: 10)) / 10)
      return .success(.eddystoneTLM(tlm))
    default:
      return .failure(
        FrameRejection(.eddystoneUnknownFrame, "unknown Eddystone frame type 0x\(Hex.byte(type))"))
    }
  }

  // Eddystone-URL scheme prefixes and expansion codes (Eddystone-URL specification).
  static let schemes = ["http://www.", "https://www.", "http://", "https://"]
  static let expansions = [
    ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
    ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov",
  ]

  static func decodeURL(scheme: UInt8, body: [UInt8]) -> String? {
    guard Int(scheme) < schemes.count else { return nil }
    var url = schemes[Int(scheme)]
    for byte in body {
      if Int(byte) < expansions.count {
        url += expansions[Int(byte)]
      } else if byte > 0x20, byte < 0x7F {
        url.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        return nil
      }
    }
    return url
  }

  static func be16(_ d: [UInt8], at i: Int) -> UInt16 { UInt16(d[i]) << 8 | UInt16(d[i + 1]) }

  static func be32(_ d: [UInt8], at i: Int) -> UInt32 {
    UInt32(d[i]) << 24 | UInt32(d[i + 1]) << 16 | UInt32(d[i + 2]) << 8 | UInt32(d[i + 3])
  }

  /// The 16 bytes at `i` as a UUID, copied in one load rather than byte by byte.
  static func uuid(_ d: [UInt8], at i: Int) -> UUID {
    precondition(i >= 0 && i + 16 <= d.count)
    return d.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(fromByteOffset: i, as: uuid_t.self)) }
  }
}
