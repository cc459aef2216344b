import CHogweed

/// An X25519 public key (RFC 7748): 32 bytes, the u-coordinate little-endian, as nettle's
/// `curve25519_mul` and the Eddystone Configuration Service both write it. Not secret.
public struct X25519PublicKey: Hashable, Sendable {
  public static let byteCount = 32
  public let bytes: [UInt8]

  /// Nil for any length but 32.
  public init?(bytes: some Collection<UInt8>) {
    guard bytes.count == Self.byteCount else { return nil }
    self.bytes = Array(bytes)
  }
}

/// An X25519 private key: the one owner of its 32 bytes, wiped (`explicit_bzero`) before they are
/// freed, never printed (`<redacted>`), never read back out. Only ever used, through
/// `publicKey` and `sharedSecret(with:_:)`, which are nettle's `curve25519_mul_g` and
/// `curve25519_mul`.
public final class X25519PrivateKey: @unchecked Sendable {
  private let storage: UnsafeMutablePointer<UInt8>

  private init(filling fill: (UnsafeMutablePointer<UInt8>) -> Void) {
    storage = .allocate(capacity: X25519PublicKey.byteCount)
    storage.initialize(repeating: 0, count: X25519PublicKey.byteCount)
    fill(storage)
  }

  deinit {
    chogweed_wipe(storage, X25519PublicKey.byteCount)
    storage.deallocate()
  }

  /// A fresh key from the system's generator (getrandom(2), through the standard library's
  /// `SystemRandomNumberGenerator`). nettle clamps the scalar as RFC 7748 section 5 says.
  public convenience init() {
    self.init { destination in
      var generator = SystemRandomNumberGenerator()
      for word in 0..<(X25519PublicKey.byteCount / 8) {
        var value = generator.next()
        withUnsafeBytes(of: &value) { bytes in
          for i in 0..<8 { destination[8 * word + i] = bytes[i] }
        }
        withUnsafeMutableBytes(of: &value) { chogweed_wipe($0.baseAddress, 8) }
      }
    }
  }

  /// A key from its 32 bytes: for tests and a simulated beacon, whose keys are not secret. Nil
  /// for any other length.
  public convenience init?(bytes: [UInt8]) {
    guard bytes.count == X25519PublicKey.byteCount else { return nil }
    self.init { destination in
      for i in 0..<X25519PublicKey.byteCount { destination[i] = bytes[i] }
    }
  }

  /// The public key: the scalar times the base point 9. The corresponding C function is
  /// `curve25519_mul_g`.
  public var publicKey: X25519PublicKey {
    var out = [UInt8](repeating: 0, count: X25519PublicKey.byteCount)
    out.withUnsafeMutableBufferPointer { nettle_curve25519_mul_g($0.baseAddress, storage) }
    return X25519PublicKey(bytes: out)!
  }

  /// Runs `body` with the 32-byte shared secret with `peer` (the scalar times the peer's point;
  /// the C function is `curve25519_mul`), in scratch memory wiped afterwards. Nil, without
  /// running `body`, when the secret is all zero: the peer sent a point of low order, and
  /// RFC 7748 section 6.1 and the Eddystone key exchange both refuse it.
  public func sharedSecret<T>(with peer: X25519PublicKey, _ body: (UnsafeRawBufferPointer) -> T) -> T? {
    let secret = UnsafeMutablePointer<UInt8>.allocate(capacity: X25519PublicKey.byteCount)
    secret.initialize(repeating: 0, count: X25519PublicKey.byteCount)
    defer {
      chogweed_wipe(secret, X25519PublicKey.byteCount)
      secret.deallocate()
    }
    peer.bytes.withUnsafeBufferPointer { nettle_curve25519_mul(secret, storage, $0.baseAddress) }
    // Every byte looked at, whatever it holds: the time taken says nothing about the secret.
    var any: UInt8 = 0
    for i in 0..<X25519PublicKey.byteCount { any |= secret[i] }
    guard any != 0 else { return nil }
    return body(UnsafeRawBufferPointer(start: secret, count: X25519PublicKey.byteCount))
  }
}

extension X25519PrivateKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
  public var description: String { "<redacted>" }
  public var debugDescription: String { "X25519PrivateKey(<redacted>)" }
  public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
