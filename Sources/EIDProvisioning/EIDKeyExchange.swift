import BeaconCrypto

/// The identity key of Eddystone-EID's secure key exchange (google/eddystone
/// eddystone-eid/eid-computation.md, "Computing the identity key"): the X25519 shared secret of
/// one side's private key and the other's public key, refused when zero; HKDF-SHA256 of it with
/// the salt = the resolver's public key followed by the beacon's (both as the Configuration
/// Service sends them, little-endian) and no info; the first 16 bytes. The resolver (this box)
/// and the beacon reach the same key, each from its own private key.
public enum EIDKeyExchange {
  /// Why no identity key came out.
  public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The shared secret is zero: the beacon's public key is a point of low order.
    case zeroSharedSecret

    public var description: String {
      "the beacon's public key gives a zero shared secret (a point of low order), which the EID key exchange refuses"
    }
  }

  /// The key as the resolver derives it, from its private key and the beacon's public key.
  public static func identityKey(
    resolver: X25519PrivateKey, beaconPublicKey: X25519PublicKey
  ) throws(Failure) -> AES128Key {
    try identityKeyBytes(resolver: resolver, beaconPublicKey: beaconPublicKey).key
  }

  /// The same, with the key's bytes kept for storing the pairing.
  public static func identityKeyBytes(
    resolver: X25519PrivateKey, beaconPublicKey: X25519PublicKey
  ) throws(Failure) -> IdentityKeyBytes {
    try derive(
      own: resolver, peer: beaconPublicKey, resolverPublicKey: resolver.publicKey,
      beaconPublicKey: beaconPublicKey)
  }

  /// The key as the beacon derives it, from its private key and the resolver's public key: what a
  /// simulated beacon does.
  public static func identityKey(
    beacon: X25519PrivateKey, resolverPublicKey: X25519PublicKey
  ) throws(Failure) -> AES128Key {
    try derive(
      own: beacon, peer: resolverPublicKey, resolverPublicKey: resolverPublicKey,
      beaconPublicKey: beacon.publicKey
    ).key
  }

  private static func derive(
    own: X25519PrivateKey, peer: X25519PublicKey, resolverPublicKey: X25519PublicKey,
    beaconPublicKey: X25519PublicKey
  ) throws(Failure) -> IdentityKeyBytes {
    let salt = resolverPublicKey.bytes + beaconPublicKey.bytes
    let key: IdentityKeyBytes?? = own.sharedSecret(with: peer) { secret in
      SecretBytes.withScratch(count: 32) { material in
        salt.withUnsafeBytes { salt in
          HKDFSHA256.derive(
            salt: salt, ikm: secret, info: UnsafeRawBufferPointer(start: nil, count: 0), into: material)
        }
        return IdentityKeyBytes(UnsafeRawBufferPointer(rebasing: material[0..<AES128Key.byteCount]))
      }
    }
    // Nil outside: the secret was zero. Nil inside cannot happen (16 bytes are always a key).
    guard let key, let key else { throw .zeroSharedSecret }
    return key
  }
}
