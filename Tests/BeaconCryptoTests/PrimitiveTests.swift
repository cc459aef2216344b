import BeaconCrypto
import BeaconTestSupport
import Foundation
import Testing

@Suite struct PrimitiveTests {
  static let vectors = OracleVectors.shared

  @Test(arguments: vectors.aes128)
  func aesBlockMatchesTheOracle(_ v: OracleVectors.AESVector) {
    let block = AESBlock(bytes: bytes(v.plaintext))!
    #expect(hex(key(v.key).encrypt(block).bytes) == v.ciphertext)
  }

  @Test(arguments: vectors.eax)
  func eaxOpensAndSealsThePaperVectors(_ v: OracleVectors.EAXVector) {
    let k = key(v.key)
    let sealed = k.eaxSeal(
      nonce: bytes(v.nonce), header: bytes(v.header), plaintext: bytes(v.plaintext), tagLength: 16)
    #expect(hex(sealed.ciphertext) == v.ciphertext)
    #expect(hex(sealed.tag) == v.tag)
    let opened = k.eaxOpen(
      nonce: bytes(v.nonce), header: bytes(v.header), ciphertext: bytes(v.ciphertext), tag: bytes(v.tag))
    #expect(opened.map(hex) == v.plaintext)
    var badTag = bytes(v.tag)
    badTag[0] ^= 0x80
    #expect(
      k.eaxOpen(nonce: bytes(v.nonce), header: bytes(v.header), ciphertext: bytes(v.ciphertext), tag: badTag)
        == nil)
    var badHeader = bytes(v.header)
    badHeader[badHeader.count - 1] ^= 0x01
    #expect(
      k.eaxOpen(nonce: bytes(v.nonce), header: badHeader, ciphertext: bytes(v.ciphertext), tag: bytes(v.tag))
        == nil)
  }

  @Test(arguments: vectors.eid)
  func eidAndTemporaryKeyMatchTheOracle(_ v: OracleVectors.EIDVector) {
    let identity = key(v.identityKey)
    let k = exponent(v.rotationExponent)
    let temporary = EddystoneEID.temporaryKey(identityKey: identity, clock: v.beaconClock)
    // The temporary key cannot be read back; it is checked by what it encrypts.
    let probe = AESBlock(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
    #expect(temporary.encrypt(probe) == key(v.temporaryKey).encrypt(probe))
    #expect(
      EddystoneEID.eid(identityKey: identity, rotationExponent: k, clock: v.beaconClock) == uint64(v.eid))
  }

  @Test func theTemporaryKeyRollsOverAt65536AndTheEIDAtEachWindow() {
    let v = Self.vectors.eid
    let at65535 = v.first { $0.rotationExponent == 10 && $0.beaconClock == 65535 }!
    let at65536 = v.first { $0.rotationExponent == 10 && $0.beaconClock == 65536 }!
    let at65280 = v.first { $0.rotationExponent == 10 && $0.beaconClock == 65280 }!
    #expect(at65280.eid == at65535.eid, "one window of 1024 s holds one EID")
    #expect(at65535.temporaryKey != at65536.temporaryKey)
    #expect(at65535.eid != at65536.eid)
  }

  @Test(arguments: vectors.ah)
  func ahMatchesTheCoreSpecAndTheOracle(_ v: OracleVectors.AHVector) {
    let prand = UInt32(v.prand, radix: 16)!
    #expect(ResolvablePrivateAddress.ah(irk: key(v.irk), prand: prand) == UInt32(v.hash, radix: 16)!)
    let rpa = ResolvablePrivateAddress(address: address(v.address))
    #expect(rpa?.prand == prand)
    #expect(rpa?.isResolved(by: key(v.irk)) == true)
  }

  @Test func onlyTopBits01AreResolvable() {
    #expect(ResolvablePrivateAddress(address: 0x70_8194_0DFBAA) != nil)
    #expect(ResolvablePrivateAddress(address: 0x30_8194_0DFBAA) == nil)
    #expect(ResolvablePrivateAddress(address: 0xB0_8194_0DFBAA) == nil)
    #expect(ResolvablePrivateAddress(address: 0xF0_8194_0DFBAA) == nil)
    #expect(ResolvablePrivateAddress(address: 0x1_70_8194_0DFBAA) == nil, "more than 48 bits")
  }

  @Test(arguments: vectors.etlm)
  func encryptedTLMOpensOnlyWithTheKeyAndClock(_ v: OracleVectors.ETLMVector) throws {
    let frame = try EncryptedTLM(serviceData: bytes(v.serviceData))
    let opened = frame.open(
      identityKey: key(v.identityKey), rotationExponent: exponent(v.rotationExponent), clock: v.beaconClock)
    #expect(opened.map(hex) == v.plainTLM, "\(v.why)")
    #expect((opened != nil) == v.valid)
  }

  @Test func encryptedTLMSealedHereIsTheOraclesFrame() throws {
    let v = Self.vectors.etlm.first { $0.valid }!
    let frame = bytes(v.serviceData)
    let sealed = EncryptedTLM.seal(
      tlm: bytes(v.plainTLM!), identityKey: key(v.identityKey),
      rotationExponent: exponent(v.rotationExponent),
      clock: v.beaconClock, salt: Array(frame[14..<16]))
    #expect(sealed == frame)
    #expect(EncryptedTLM.plainFrame(tlm: bytes(v.plainTLM!)).count == 14)
  }

  @Test func encryptedTLMFramesOfTheWrongShapeAreRefused() {
    #expect(throws: EncryptedTLM.Refusal.notEncryptedTLM) {
      try EncryptedTLM(serviceData: [0x20, 0x00] + [UInt8](repeating: 0, count: 12))
    }
    #expect(throws: EncryptedTLM.Refusal.notEncryptedTLM) { try EncryptedTLM(serviceData: [UInt8]()) }
    #expect(throws: EncryptedTLM.Refusal.wrongLength(17)) {
      try EncryptedTLM(serviceData: [0x20, 0x01] + [UInt8](repeating: 0, count: 15))
    }
    #expect(throws: EncryptedTLM.Refusal.wrongLength(19)) {
      try EncryptedTLM(serviceData: [0x20, 0x01] + [UInt8](repeating: 0, count: 17))
    }
  }

  @Test func eidFramesAreExactlyTenBytes() {
    let frame: [UInt8] = [0x30, 0xEE, 1, 2, 3, 4, 5, 6, 7, 8]
    #expect(EddystoneEID.eid(fromServiceData: frame) == 0x0102_0304_0506_0708)
    #expect(EddystoneEID.eid(fromServiceData: frame + [0]) == nil)
    #expect(EddystoneEID.eid(fromServiceData: frame.dropLast()) == nil)
    #expect(EddystoneEID.eid(fromServiceData: [0x00] + frame.dropFirst()) == nil)
    #expect(EddystoneEID.bytes(of: 0x0102_0304_0506_0708) == [1, 2, 3, 4, 5, 6, 7, 8])
  }

  @Test func rotationExponentIsZeroToFifteen() {
    #expect(RotationExponent(rawValue: 15)?.periodSeconds == 32_768)
    #expect(RotationExponent(rawValue: 16) == nil)
  }
}

@Suite struct KeyTests {
  static let secret = "7748ef9ea82752bedfd8b2f9f7a2bbbb"

  @Test func aKeyNeverPrints() {
    let k = key(Self.secret)
    var dumped = ""
    dump(k, to: &dumped)
    let shown = [
      String(describing: k), String(reflecting: k), "\(k)", dumped, "\([k])", "\(Optional(k) as Any)",
    ]
    for text in shown {
      #expect(text.contains("<redacted>"), "\(text)")
      #expect(!text.lowercased().contains("7748"), "\(text)")
      #expect(!text.lowercased().contains("bbbb"), "\(text)")
    }
    #expect(Mirror(reflecting: k).children.isEmpty)
  }

  @Test func aPairingDumpedShowsNoKey() {
    let pairing = EIDPairing(
      id: 1, identityKey: key(Self.secret), rotationExponent: exponent(10), clockOffset: 5)
    var dumped = ""
    dump(pairing, to: &dumped)
    #expect(dumped.contains("identityKey: AES128Key(<redacted>)"))
    #expect(!dumped.lowercased().contains("7748"))
    #expect(!"\(pairing)".lowercased().contains("7748"))
  }

  @Test func aDerivedKeyNeverPrintsEither() {
    let derived = EddystoneEID.temporaryKey(identityKey: key(Self.secret), clock: 65536)
    var dumped = ""
    dump(derived, to: &dumped)
    #expect(dumped.contains("<redacted>"))
    #expect(String(describing: derived) == "<redacted>")
  }

  static let otherCharacters = "a key is 32 hexadecimal digits (0-9, a-f); this one has other characters"
  static let badKeys: [(String, String)] = [
    ("", "a key is 32 hexadecimal digits, not 0 characters"),
    (String(secret.dropLast()), "a key is 32 hexadecimal digits, not 31 characters"),
    (secret + "0", "a key is 32 hexadecimal digits, not 33 characters"),
    ("g" + String(secret.dropFirst()), otherCharacters),
    (String(secret.prefix(16)) + " " + String(secret.dropFirst(17)), otherCharacters),
  ]

  @Test(arguments: badKeys)
  func aBadKeyIsRefusedWithoutRepeatingIt(text: String, message: String) {
    do {
      _ = try AES128Key(hex: text)
      Issue.record("accepted")
    } catch {
      #expect(error.description == message)
      #expect(!error.description.contains("7748"))
    }
  }

  @Test func aKeyFileMayEndInANewlineAndBeUpperCase() throws {
    let text = Array((Self.secret.uppercased() + "\n").utf8)
    let fromFile = try text.withUnsafeBytes { try AES128Key(hexUTF8: $0) }
    let probe = AESBlock(high: 1, low: 2)
    #expect(fromFile.encrypt(probe) == key(Self.secret).encrypt(probe))
    let raw = bytes(Self.secret)
    let fromBytes = try raw.withUnsafeBytes { try AES128Key(bytes: $0) }
    #expect(fromBytes.encrypt(probe) == key(Self.secret).encrypt(probe))
    #expect(throws: KeyFormatError.self) { try raw.dropLast().withUnsafeBytes { try AES128Key(bytes: $0) } }
  }
}

@Suite struct FrameShapeTests {
  /// A generator with a fixed seed (SplitMix64), so a failure repeats.
  struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }

  /// Hostile service data: every length from 0 to 40, leading bytes that look like the frames
  /// and not. Each is accepted exactly when its shape is the spec's, and nothing traps.
  @Test func serviceDataOfAnyShapeIsAcceptedOnlyWhenItIsTheFrame() {
    var rng = SplitMix(state: 29)
    let identity = key("000102030405060708090a0b0c0d0e0f")
    let k = exponent(10)
    var opened = 0
    for _ in 0..<20_000 {
      let count = Int.random(in: 0...40, using: &rng)
      var data = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
      if count > 0, Bool.random(using: &rng) { data[0] = [0x20, 0x30].randomElement(using: &rng)! }
      if count > 1, Bool.random(using: &rng) { data[1] = 0x01 }
      let isEID = count == 10 && data[0] == 0x30
      #expect((EddystoneEID.eid(fromServiceData: data) != nil) == isEID)
      let isETLM = count == 18 && data[0] == 0x20 && data[1] == 0x01
      let frame = try? EncryptedTLM(serviceData: data)
      #expect((frame != nil) == isETLM)
      if let frame, frame.open(identityKey: identity, rotationExponent: k, clock: 65_536) != nil {
        opened += 1
      }
    }
    // Random bytes pass a 16-bit MIC about once in 65,536 tries: far fewer than 3 here.
    #expect(opened < 3)
  }
}
