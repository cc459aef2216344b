import BeaconCrypto
import BeaconTestSupport
import EIDProvisioning
import Testing

@Suite struct KeyExchangeTests {
  static let vectors = OracleVectors.shared

  @Test(arguments: vectors.x25519)
  func x25519MatchesRFC7748AndTheOracle(_ v: OracleVectors.X25519Vector) throws {
    let alice = try #require(X25519PrivateKey(bytes: bytes(v.alicePrivate)))
    let bob = try #require(X25519PrivateKey(bytes: bytes(v.bobPrivate)))
    #expect(hex(alice.publicKey.bytes) == v.alicePublic, "\(v.why)")
    #expect(hex(bob.publicKey.bytes) == v.bobPublic, "\(v.why)")
    #expect(alice.sharedSecret(with: bob.publicKey) { hex(Array($0)) } == v.sharedSecret, "\(v.why)")
    #expect(bob.sharedSecret(with: alice.publicKey) { hex(Array($0)) } == v.sharedSecret, "\(v.why)")
  }

  @Test(arguments: vectors.hkdfSHA256)
  func hkdfMatchesRFC5869(_ v: OracleVectors.HKDFVector) {
    #expect(hex(HKDFSHA256.extract(salt: bytes(v.salt), ikm: bytes(v.ikm))) == v.prk, "\(v.why)")
    #expect(
      hex(HKDFSHA256.derive(salt: bytes(v.salt), ikm: bytes(v.ikm), info: bytes(v.info), length: v.length))
        == v.okm, "\(v.why)")
  }

  @Test(arguments: vectors.eidKeyExchange)
  func theIdentityKeyMatchesTheOracleFromBothSides(_ v: OracleVectors.Exchange) throws {
    let resolver = try #require(X25519PrivateKey(bytes: bytes(v.resolverPrivate)))
    #expect(hex(resolver.publicKey.bytes) == v.resolverPublic)
    let beaconPublic = try #require(X25519PublicKey(bytes: bytes(v.beaconPublic)))
    guard let expected = v.identityKey, let eid = v.eid, let beaconPrivate = v.beaconPrivate else {
      #expect(throws: EIDKeyExchange.Failure.zeroSharedSecret, "\(v.why)") {
        try EIDKeyExchange.identityKey(resolver: resolver, beaconPublicKey: beaconPublic)
      }
      #expect(resolver.sharedSecret(with: beaconPublic) { _ in true } == nil)
      return
    }
    let derived = try EIDKeyExchange.identityKey(resolver: resolver, beaconPublicKey: beaconPublic)
    #expect(sameKey(derived, try AES128Key(hex: expected)), "\(v.why)")
    let beacon = try #require(X25519PrivateKey(bytes: bytes(beaconPrivate)))
    #expect(hex(beacon.publicKey.bytes) == v.beaconPublic)
    let beaconSide = try EIDKeyExchange.identityKey(beacon: beacon, resolverPublicKey: resolver.publicKey)
    #expect(sameKey(beaconSide, derived))
    // The project's own EID computation over the derived key gives the oracle's EID.
    let k = try #require(RotationExponent(rawValue: v.rotationExponent))
    #expect(
      hex(
        EddystoneEID.bytes(
          of: EddystoneEID.eid(identityKey: derived, rotationExponent: k, clock: v.beaconClock)))
        == eid)
  }

  @Test func freshKeysDifferAndNeverPrint() {
    let a = X25519PrivateKey()
    let b = X25519PrivateKey()
    #expect(a.publicKey != b.publicKey)
    #expect("\(a)" == "<redacted>")
    var dumped = ""
    dump(a, to: &dumped)
    #expect(!dumped.contains(hex(a.publicKey.bytes)))
    #expect(X25519PrivateKey(bytes: [1, 2, 3]) == nil)
    #expect(X25519PublicKey(bytes: [UInt8](repeating: 9, count: 31)) == nil)
  }
}
