import CHogweed

/// HKDF with HMAC-SHA256 (RFC 5869), nettle's `hkdf_extract` and `hkdf_expand`.
public enum HKDFSHA256 {
  /// RFC 5869 2.3: at most 255 blocks of the hash's 32 bytes.
  public static let maximumLength = 255 * 32

  /// Fills `output` (1 to `maximumLength` bytes) with the key material for `ikm` under `salt`
  /// and `info`. An empty salt is HashLen zero bytes (RFC 5869 2.2), as HMAC pads any key.
  public static func derive(
    salt: UnsafeRawBufferPointer, ikm: UnsafeRawBufferPointer, info: UnsafeRawBufferPointer,
    into output: UnsafeMutableRawBufferPointer
  ) {
    precondition((1...maximumLength).contains(output.count), "HKDF-SHA256 gives 1 to 8160 bytes")
    chogweed_hkdf_sha256(
      bytes(salt), salt.count, bytes(ikm), ikm.count, bytes(info), info.count,
      output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count)
  }

  /// The same over arrays: for tests and values that are not secret.
  public static func derive(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: length)
    salt.withUnsafeBytes { s in
      ikm.withUnsafeBytes { k in
        info.withUnsafeBytes { i in out.withUnsafeMutableBytes { derive(salt: s, ikm: k, info: i, into: $0) }
        }
      }
    }
    return out
  }

  /// HKDF-Extract alone: the pseudorandom key RFC 5869's test cases list.
  public static func extract(salt: [UInt8], ikm: [UInt8]) -> [UInt8] {
    var prk = [UInt8](repeating: 0, count: 32)
    salt.withUnsafeBytes { s in
      ikm.withUnsafeBytes { k in
        prk.withUnsafeMutableBufferPointer {
          chogweed_hkdf_sha256_extract(bytes(s), s.count, bytes(k), k.count, $0.baseAddress)
        }
      }
    }
    return prk
  }

  /// A byte nettle may be pointed at for an empty buffer (whose base address may be nil): never
  /// read, as the length given with it is 0, and never written.
  nonisolated(unsafe) private static let empty: UnsafeMutablePointer<UInt8> = {
    let byte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    byte.initialize(to: 0)
    return byte
  }()
  private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
    if let base = buffer.baseAddress { return base.assumingMemoryBound(to: UInt8.self) }
    return UnsafePointer(empty)
  }
}
