import BeaconCore
import Testing

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// SplitMix64 (Steele, Lea, Flood 2014; the constants of Vigna's reference C code): a small,
/// seeded generator, so every run sees the same inputs and a failure names the case to replay.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  mutating func bytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &self) }
  }
}

/// The parser must never crash, never read past its input, and always give the same answer; these
/// tests throw a few thousand random and mutated advertisements at it.
@Suite struct FramePropertyTests {
  /// The valid advertisements of the frame tables: mutations of real frames reach deeper than
  /// random bytes do.
  static let corpus: [[UInt8]] =
    (FrameParserTests.vectors + EddystoneTests.vectors).map { Fixture.bytes($0.hex) }.filter { !$0.isEmpty }

  @Test func corpusIsValid() {
    for bytes in Self.corpus {
      #expect(AdvertisingDataParser.structures(bytes).rejectionReason == nil, "\(Hex.encode(bytes))")
    }
  }

  @Test func randomBytes() {
    var rng = SplitMix64(seed: 0x5EED_0001)
    for index in 0..<4000 {
      let bytes = rng.bytes(Int.random(in: 0...300, using: &rng))
      Self.checkProperties(bytes, label: "random #\(index)")
    }
  }

  /// Random sequences of well-formed AD structures of the types the parser reads, with bodies that
  /// are sometimes beacon-shaped: these pass the AD layer and exercise the frame parsers.
  @Test func randomStructures() {
    var rng = SplitMix64(seed: 0x5EED_0002)
    let types: [UInt8] = [0xFF, 0xFF, 0x16, 0x16, 0x20, 0x21, 0x0A, 0x08, 0x09, 0x01, 0x03]
    for index in 0..<3000 {
      var bytes: [UInt8] = []
      for _ in 0..<Int.random(in: 0...6, using: &rng) {
        let type = types.randomElement(using: &rng)!
        var body: [UInt8]
        switch (type, Int.random(in: 0..<4, using: &rng)) {
        case (0xFF, 0): body = [0x4C, 0x00, 0x02, 0x15] + rng.bytes(Int.random(in: 0...24, using: &rng))
        case (0xFF, 1): body = rng.bytes(2) + [0xBE, 0xAC] + rng.bytes(Int.random(in: 0...26, using: &rng))
        case (0x16, 0), (0x16, 1):
          let frameType = [0x00, 0x10, 0x20, 0x30, 0x01].randomElement(using: &rng)!
          body = [0xAA, 0xFE, UInt8(frameType)] + rng.bytes(Int.random(in: 0...22, using: &rng))
        default: body = rng.bytes(Int.random(in: 0...30, using: &rng))
        }
        bytes += [UInt8(body.count + 1), type] + body
      }
      if Bool.random(using: &rng) {
        bytes += [UInt8](repeating: 0, count: Int.random(in: 0...8, using: &rng))
      }
      Self.checkProperties(bytes, label: "structured #\(index)")
    }
  }

  /// Bit flips, truncations, length-byte corruption, insertions and deletions of valid frames.
  @Test func mutatedFrames() {
    var rng = SplitMix64(seed: 0x5EED_0003)
    for index in 0..<4000 {
      var bytes = Self.corpus.randomElement(using: &rng)!
      for _ in 0..<Int.random(in: 1...3, using: &rng) {
        Self.mutate(&bytes, using: &rng)
      }
      Self.checkProperties(bytes, label: "mutation #\(index)")
    }
  }

  /// Every prefix of every valid frame (a truncated report).
  @Test func everyTruncation() {
    for bytes in Self.corpus {
      for end in 0...bytes.count {
        Self.checkProperties(Array(bytes[..<end]), label: "prefix \(end) of \(Hex.encode(bytes))")
      }
    }
  }

  @Test func randomEddystoneServiceData() {
    var rng = SplitMix64(seed: 0x5EED_0004)
    for _ in 0..<3000 {
      var data = rng.bytes(Int.random(in: 0...40, using: &rng))
      if !data.isEmpty { data[0] = [0x00, 0x10, 0x20, 0x30, data[0]].randomElement(using: &rng)! }
      let first = BeaconFrameParser.parseEddystone(data)
      #expect(first == BeaconFrameParser.parseEddystone(data))
      if case .success(.eddystoneURL(let frame)) = first {
        // Decoded URLs hold only printable US-ASCII (Eddystone-URL: 0x00-0x20 and 0x7F-0xFF are codes
        // or reserved).
        #expect(
          frame.url.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }, "\(Hex.encode(data))")
      }
    }
  }

  // MARK: Properties

  static func checkProperties(_ bytes: [UInt8], label: @autoclosure () -> String) {
    let structures = AdvertisingDataParser.structures(bytes)
    #expect(structures == AdvertisingDataParser.structures(bytes), "not deterministic: \(label())")
    switch structures {
    case .success(let list):
      #expect(bytes.count <= AdvertisingDataParser.maximumLength, "\(label())")
      // Each structure is the next sub-slice of the input: length octet, type, data. The last one
      // is followed by the end, a zero length octet (Core spec Vol 3 Part C 11) or a structure that
      // runs past the end (BlueZ eir_parse), and nothing is consumed past the end.
      var offset = 0
      for s in list {
        let end = offset + 2 + s.data.count
        guard end <= bytes.count else {
          Issue.record("structure past the end of the input: \(label())")
          return
        }
        #expect(Int(bytes[offset]) == s.data.count + 1, "\(label())")
        #expect(bytes[offset + 1] == s.type, "\(label())")
        #expect(Array(bytes[(offset + 2)..<end]) == s.data, "\(label())")
        offset = end
      }
      #expect(offset <= bytes.count)
      #expect(
        offset == bytes.count || bytes[offset] == 0 || Int(bytes[offset]) > bytes.count - offset - 1,
        "\(label())")
    case .failure(let rejection):
      #expect(!rejection.detail.isEmpty)
      #expect(
        (bytes.count > AdvertisingDataParser.maximumLength) == (rejection.reason == .dataTooLong),
        "\(label())")
      #expect(rejection.reason == .dataTooLong, "\(label())")
    }

    let ad = Advertisement.parse(address: Fixture.address, rssi: -60, adStructures: bytes)
    #expect(ad == Advertisement.parse(address: Fixture.address, rssi: -60, adStructures: bytes), "\(label())")
    if case .failure(let rejection) = structures {
      #expect(ad == .failure(rejection), "\(label())")
    }
    guard case .success(let advertisement) = ad, case .success(let list) = structures else { return }
    // Manufacturer data too short for a company ID is skipped (BlueZ eir_parse_msd).
    #expect(
      advertisement.manufacturerData.count == list.filter { $0.type == 0xFF && $0.data.count >= 2 }.count)

    let result = BeaconFrameParser.parse(advertisement)
    #expect(result == BeaconFrameParser.parse(advertisement), "\(label())")
    let candidates =
      advertisement.manufacturerData.count + advertisement.serviceData.filter { $0.uuid == .eddystone }.count
    #expect(result.frames.count + result.rejections.count <= candidates, "\(label())")
    // Frames found in manufacturer data encode back to the bytes they came from.
    for frame in result.frames {
      if let encoded = encode(frame) {
        #expect(advertisement.manufacturerData.contains(encoded), "\(label())")
      }
    }
  }

  /// iBeacon and AltBeacon frames as manufacturer data, field by field from the specifications.
  static func encode(_ frame: BeaconFrame) -> ManufacturerData? {
    func body(_ identity: BeaconIdentity) -> [UInt8] {
      withUnsafeBytes(of: identity.uuid.uuid) { Array($0) }
        + [UInt8(identity.major >> 8), UInt8(identity.major & 0xFF), UInt8(identity.minor >> 8)]
        + [UInt8(identity.minor & 0xFF)]
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
    case .eddystoneUID, .eddystoneURL, .eddystoneTLM, .eddystoneEID, .ignored:
      return nil
    }
  }

  static func mutate(_ bytes: inout [UInt8], using rng: inout SplitMix64) {
    switch Int.random(in: 0..<6, using: &rng) {
    case 0:  // flip one bit
      guard !bytes.isEmpty else { return }
      let i = Int.random(in: 0..<bytes.count, using: &rng)
      bytes[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
    case 1:  // truncate
      bytes.removeLast(Int.random(in: 0...bytes.count, using: &rng))
    case 2:  // corrupt a length octet: walk the structures and rewrite one of them
      var starts: [Int] = []
      var i = 0
      while i < bytes.count, bytes[i] != 0 {
        starts.append(i)
        i += 1 + Int(bytes[i])
      }
      guard let start = starts.randomElement(using: &rng) else { return }
      bytes[start] =
        Bool.random(using: &rng)
        ? UInt8.random(in: .min ... .max, using: &rng)
        : UInt8(truncatingIfNeeded: Int(bytes[start]) + Int.random(in: -2...2, using: &rng))
    case 3:  // insert a byte
      bytes.insert(
        UInt8.random(in: .min ... .max, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
    case 4:  // delete a byte
      guard !bytes.isEmpty else { return }
      bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
    default:  // append padding or garbage, sometimes past 255 bytes
      bytes +=
        Bool.random(using: &rng)
        ? [UInt8](repeating: 0, count: Int.random(in: 1...240, using: &rng))
        : (0..<Int.random(in: 1...16, using: &rng)).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
    }
  }
}
