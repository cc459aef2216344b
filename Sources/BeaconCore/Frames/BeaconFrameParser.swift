#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// What one advertisement held: the beacon frames found, and a rejection for each structure that
/// looked like a beacon frame but was malformed. An advertisement with neither is simply not a
/// beacon.
public struct FrameParseResult: Hashable, Sendable {
  public var frames: BeaconFrames
  /// nil rather than empty: even an empty array is a reference, retained and released with every
  /// copy of the result, and there is a result for every advertisement heard.
  @usableFromInline var storedRejections: [FrameRejection]?

  public var rejections: [FrameRejection] {
    @inlinable get { storedRejections ?? [] }
    set { storedRejections = newValue.isEmpty ? nil : newValue }
  }

  public init(frames: BeaconFrames = BeaconFrames(), rejections: [FrameRejection] = []) {
    self.frames = frames
    storedRejections = rejections.isEmpty ? nil : rejections
  }

  @inline(__always)
  init(frames: BeaconFrames, storedRejections: [FrameRejection]?) {
    self.frames = frames
    self.storedRejections = storedRejections
  }
}

/// The beacon frames found in one advertisement, in order.
///
/// `BeaconFrameParser.parse` runs for every advertisement heard, and almost every advertisement
/// holds at most one frame: the first frame is stored inline and only further ones go to an array,
/// so parsing a beacon allocates nothing, and a result holding one iBeacon frame is copied and
/// destroyed without touching a reference count (an array of frames allocated its storage on
/// every sighting, and freed it after). Its accessors are inlinable, so that a caller outside the
/// module iterates it without a call per element.
public struct BeaconFrames: RandomAccessCollection, Hashable, Sendable, ExpressibleByArrayLiteral {
  /// The first frame; nil only when there is none.
  @usableFromInline var head: BeaconFrame?
  /// The frames after the first; nil rather than empty (see `FrameParseResult.rejections`).
  @usableFromInline var tail: [BeaconFrame]?
  /// How many frames there are, kept so that neither `count` nor `append` has to look into
  /// `head` (an enum of enums, each look a copy).
  @usableFromInline var frameCount: Int

  @inlinable public init() {
    head = nil
    tail = nil
    frameCount = 0
  }

  public init(_ frames: some Sequence<BeaconFrame>) {
    self.init()
    for frame in frames { append(frame) }
  }

  public init(arrayLiteral frames: BeaconFrame...) {
    self.init(frames)
  }

  @inlinable public var startIndex: Int { 0 }
  @inlinable public var endIndex: Int { frameCount }

  @inlinable public subscript(position: Int) -> BeaconFrame {
    precondition(position >= 0 && position < frameCount, "BeaconFrames index out of range")
    return position == 0 ? head.unsafelyUnwrapped : tail.unsafelyUnwrapped[position - 1]
  }

  @inlinable public mutating func append(_ frame: BeaconFrame) {
    if frameCount == 0 {
      head = frame
    } else if tail == nil {
      tail = [frame]
    } else {
      tail!.append(frame)
    }
    frameCount += 1
  }

  @inlinable public func makeIterator() -> Iterator { Iterator(frames: self) }

  /// Hands out the first frame by moving it out rather than copying it.
  public struct Iterator: IteratorProtocol {
    @usableFromInline var frames: BeaconFrames
    @usableFromInline var position = 0

    @inlinable init(frames: BeaconFrames) {
      self.frames = frames
    }

    @inlinable public mutating func next() -> BeaconFrame? {
      guard position < frames.frameCount else { return nil }
      position += 1
      return position == 1 ? frames.head.take() : frames.tail.unsafelyUnwrapped[position - 2]
    }
  }

  public static func == (a: BeaconFrames, b: BeaconFrames) -> Bool { a.elementsEqual(b) }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    for frame in self { hasher.combine(frame) }
  }
}

/// Finds iBeacon, AltBeacon and Eddystone frames in an advertisement.
public enum BeaconFrameParser {
  /// Apple's company identifier (Bluetooth SIG assigned numbers).
  public static let appleCompanyID: UInt16 = 0x004C
  /// iBeacon type and length bytes after Apple's company ID.
  public static let iBeaconType: UInt8 = 0x02
  public static let iBeaconLength: UInt8 = 0x15
  /// AltBeacon beacon code, big-endian on the air (AltBeacon specification 1.0).
  static let altBeaconCodeHigh: UInt8 = 0xBE
  static let altBeaconCodeLow: UInt8 = 0xAC
  /// Manufacturer data length of an AltBeacon after the company ID.
  static let altBeaconDataLength = 24

  /// The frame of an advertisement that holds one well-formed iBeacon and nothing else `parse`
  /// reads (one manufacturer data entry, no service data), or nil for any other: then `parse`
  /// gives exactly `[.iBeacon(frame)]` and no rejection. The pipeline's common case, read without
  /// building a `FrameParseResult` (whose copies and destruction were about 200 instructions per
  /// advertisement, callgrind).
  @inline(__always)
  static func soleIBeacon(_ ad: Advertisement) -> IBeaconFrame? {
    guard ad.manufacturerData.count == 1, ad.serviceData.isEmpty else { return nil }
    return ad.manufacturerData.withUnsafeBufferPointer { entries -> IBeaconFrame? in
      let companyID = entries[0].companyID
      guard let fields = entries[0].data.withUnsafeBufferPointer({ iBeaconFields(companyID, $0) }) else {
        return nil
      }
      return IBeaconFrame(identity: fields.identity, measuredPower: fields.power)
    }
  }

  /// An advertisement whose only datum is one Eddystone-EID frame (service data 0xFEAA, frame
  /// 0x30, ten bytes), as an EID beacon sends it: the frame, read in place, as `parse` would
  /// give it.
  static func soleEID(_ ad: Advertisement) -> EddystoneEIDFrame? {
    guard ad.manufacturerData.isEmpty, ad.serviceData.count == 1 else { return nil }
    return ad.serviceData.withUnsafeBufferPointer { entries -> EddystoneEIDFrame? in
      guard entries[0].uuid == .eddystone else { return nil }
      return entries[0].data.withUnsafeBufferPointer { d -> EddystoneEIDFrame? in
        guard d.count == 10, d[0] == 0x30 else { return nil }
        var eid: UInt64 = 0
        for i in 2..<10 { eid = eid << 8 | UInt64(d[i]) }
        return EddystoneEIDFrame(txPower: Int8(bitPattern: d[1]), eid: eid)
      }
    }
  }

  public static func parse(_ ad: Advertisement) -> FrameParseResult {
    var frames = BeaconFrames()
    var rejections: [FrameRejection]?
    ad.manufacturerData.withUnsafeBufferPointer { entries in
      for i in entries.indices {
        // The common case, read in place with nothing but loads and compares, so that the
        // entry's bytes need not be retained around the read.
        let companyID = entries[i].companyID
        if let fields = entries[i].data.withUnsafeBufferPointer({ iBeaconFields(companyID, $0) }) {
          frames.append(
            .iBeacon(
              IBeaconFrame(identity: fields.identity, measuredPower: fields.power)))
          continue
        }
        switch parseManufacturerData(entries[i]) {
        case .none: continue
        case .some(.success(let frame)): frames.append(frame)
        case .some(.failure(let rejection)): rejections = (rejections ?? []) + [rejection]
        }
      }
    }
    for s in ad.serviceData where s.uuid == .eddystone {
      switch parseEddystone(s.data) {
      case .success(let frame): frames.append(frame)
      case .failure(let rejection): rejections = (rejections ?? []) + [rejection]
      }
    }
    return FrameParseResult(frames: frames, storedRejections: rejections)
  }

  /// The fields of a well-formed iBeacon, or nil for anything else (which `parseManufacturerData`
  /// then reads, rejections included).
  @inline(__always)
  private static func iBeaconFields(_ companyID: UInt16, _ d: UnsafeBufferPointer<UInt8>) -> (
    identity: BeaconIdentity, power: Int8
  )? {
    guard companyID == appleCompanyID, d.count == 2 + Int(iBeaconLength), d[0] == iBeaconType,
      d[1] == iBeaconLength
    else { return nil }
    return (identity(d, at: 2), Int8(bitPattern: d[22]))
  }

  /// nil when the data is not a beacon frame at all.
  public static func parseManufacturerData(_ m: ManufacturerData) -> Result<BeaconFrame, FrameRejection>? {
    m.data.withUnsafeBufferPointer { parseManufacturerData(companyID: m.companyID, $0) }
  }

  /// Reads the bytes in place: every advertisement heard comes through here.
  private static func parseManufacturerData(companyID: UInt16, _ d: UnsafeBufferPointer<UInt8>) -> Result<
    BeaconFrame, FrameRejection
  >? {
    if companyID == appleCompanyID, d.count >= 1, d[0] == iBeaconType {
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
      let identity = identity(d, at: 2)
      return .success(.iBeacon(IBeaconFrame(identity: identity, measuredPower: Int8(bitPattern: d[22]))))
    }
    if d.count >= 2, d[0] == altBeaconCodeHigh, d[1] == altBeaconCodeLow {
      // After the company ID: the code (2), the beacon ID (20), the reference RSSI (1) and the
      // reserved byte (1), 24 bytes in all (AltBeacon specification 1.0: AD length 0x1B).
      //
      // Decision: a frame without the reserved byte (23 bytes, AD length 0x1A) is accepted, with
      // `reserved` nil. The AltBeacon reference library does so on purpose (android-beacon-library
      // PR #230, "allow missing data fields"; BeaconParserTest.testParsesBeaconMissingDataField),
      // the byte carries nothing this project reads, and Eddystone-UID without its RFU bytes is
      // accepted the same way. Anything shorter cuts into the identity or the reference RSSI and
      // is rejected; anything longer is not an AltBeacon.
      guard d.count == altBeaconDataLength || d.count == altBeaconDataLength - 1 else {
        return .failure(
          FrameRejection(
            .altBeaconShortBody,
            "AltBeacon code with \(d.count) bytes of manufacturer data; expected \(altBeaconDataLength) "
              + "(or \(altBeaconDataLength - 1) without the reserved byte)"))
      }
      let identity = identity(d, at: 2)
      return .success(
        .altBeacon(
          AltBeaconFrame(
            companyID: companyID, identity: identity, referenceRSSI: Int8(bitPattern: d[22]),
            reserved: d.count == altBeaconDataLength ? d[23] : nil)))
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
      // Encrypted TLM (version 0x01, Eddystone-EID specification "Encrypted TLM") and unknown
      // versions are well-formed frames this project cannot read: ignored, not malformed.
      guard d[1] == 0x00 else { return .success(.ignored(IgnoredFrame(frameType: type, version: d[1]))) }
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
    case 0x30 where d.count == 10:
      // EID: type, ranging data (TX power at 0 m), 8-byte EID (Eddystone-EID specification).
      // Any other length is not this frame: counted as an ignored kind below, as before.
      let eid = d[2...].reduce(0 as UInt64) { $0 << 8 | UInt64($1) }
      return .success(.eddystoneEID(EddystoneEIDFrame(txPower: Int8(bitPattern: d[1]), eid: eid)))
    default:
      // EID (0x30) of another length, Google Find Hub (0x40, 0x41) and any other frame type under 0xFEAA: a frame
      // of a known family that is not decoded here. Counted per kind, never rejected: a
      // vehicle full of such trackers must not flood the log with "malformed").
      return .success(.ignored(IgnoredFrame(frameType: type)))
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

  static func be16<Bytes: RandomAccessCollection<UInt8>>(_ d: Bytes, at i: Int) -> UInt16
  where Bytes.Index == Int {
    UInt16(d[i]) << 8 | UInt16(d[i + 1])
  }

  static func be32<Bytes: RandomAccessCollection<UInt8>>(_ d: Bytes, at i: Int) -> UInt32
  where Bytes.Index == Int {
    UInt32(d[i]) << 24 | UInt32(d[i + 1]) << 16 | UInt32(d[i + 2]) << 8 | UInt32(d[i + 3])
  }

  /// The 20 bytes at `i` as an identity: a 16-byte UUID, then major and minor (big-endian). The
  /// UUID is read as two word loads, never through `UUID` (see `BeaconIdentity.uuidLow`).
  @inline(__always)
  static func identity(_ d: UnsafeBufferPointer<UInt8>, at i: Int) -> BeaconIdentity {
    precondition(i >= 0 && i + 20 <= d.count)
    let raw = UnsafeRawBufferPointer(d)
    return BeaconIdentity(
      uuidLow: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self),
      uuidHigh: raw.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self), major: be16(d, at: i + 16),
      minor: be16(d, at: i + 18))
  }
}
