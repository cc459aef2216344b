#if canImport(Glibc)
  import Glibc
#endif

/// Hands memory that was freed back to the system.
enum MemoryRelease {
  /// glibc's `malloc_trim`, looked up at run time: it is declared in `<malloc.h>`, which the
  /// Glibc module does not import, and other C libraries have no such call.
  private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
    #if canImport(Glibc)
      guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
      return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    #else
      return nil
    #endif
  }()

  /// glibc keeps freed chunks in its arenas, so after a flood of devices was forgotten the
  /// process would keep its peak size for good; `malloc_trim` returns the free pages.
  static func returnFreedMemory() {
    _ = mallocTrim?(0)
  }
}
