import CNettle

/// Wiping a buffer that held a secret (a key file's bytes) before it is freed: glibc's
/// `explicit_bzero`, which the compiler may not remove as a dead store.
public enum SecretBytes {
  public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress else { return }
    cnettle_wipe(base, buffer.count)
  }

  /// `count` bytes of scratch memory for a secret, wiped and freed after `body`.
  public static func withScratch<T, E: Error>(
    count: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> T
  ) throws(E) -> T {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
    defer {
      wipe(buffer)
      buffer.deallocate()
    }
    return try body(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
  }
}
