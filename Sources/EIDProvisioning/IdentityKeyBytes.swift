import BeaconCrypto

/// An identity key's 16 bytes, for the one place that needs them as bytes: storing the pairing
/// (the store and the daemon's PairWithKey take the key's hex digits). Wiped before it is freed,
/// never printed (`<redacted>`).
public final class IdentityKeyBytes: @unchecked Sendable {
  private let storage: UnsafeMutableRawBufferPointer
  /// The key for AES, made once from the bytes.
  public let key: AES128Key

  /// Nil unless `bytes` is 16 bytes. The caller wipes its own copy.
  public init?(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count == AES128Key.byteCount, let key = try? AES128Key(bytes: bytes) else { return nil }
    storage = .allocate(byteCount: AES128Key.byteCount, alignment: 16)
    storage.copyMemory(from: bytes)
    self.key = key
  }

  deinit {
    SecretBytes.wipe(storage)
    storage.deallocate()
  }

  /// The 32 lower-case hex digits as UTF-8, as a key file holds them. The caller wipes the array
  /// (`SecretBytes.wipe`) once it is stored.
  public func hexDigits() -> [UInt8] {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var out = [UInt8](repeating: 0, count: 2 * AES128Key.byteCount)
    for i in 0..<AES128Key.byteCount {
      out[2 * i] = digits[Int(storage[i] >> 4)]
      out[2 * i + 1] = digits[Int(storage[i] & 0x0F)]
    }
    return out
  }

  /// The 16 bytes, for `body` only: to encrypt them for the shared-key registration.
  func withBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T { body(UnsafeRawBufferPointer(storage)) }
}

extension IdentityKeyBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
  public var description: String { "<redacted>" }
  public var debugDescription: String { "IdentityKeyBytes(<redacted>)" }
  public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
