#if canImport(Glibc)
  import Glibc
#endif

/// glibc malloc settings for a long-running, mostly idle daemon, and handing freed memory back.
///
/// Both calls are looked up at run time (`<malloc.h>` is not in the Glibc module, and other C
/// libraries have neither); elsewhere they do nothing.
public enum MallocTuning {
  /// `M_ARENA_MAX` from `<malloc.h>`.
  private static let arenaMaxParameter: Int32 = -8
  /// `M_MMAP_THRESHOLD` from `<malloc.h>`.
  private static let mmapThresholdParameter: Int32 = -3
  /// Blocks of this size or more are mapped on their own (`mapLargeBlocks`).
  public static let largeBlock = 128 * 1024

  private static let mallopt: (@convention(c) (Int32, Int32) -> Int32)? = symbol("mallopt")
  private static let mallocTrim: (@convention(c) (Int) -> Int32)? = symbol("malloc_trim")

  private static func symbol<F>(_ name: String) -> F? {
    #if canImport(Glibc)
      guard let pointer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
      return unsafeBitCast(pointer, to: F.self)
    #else
      return nil
    #endif
  }

  /// One malloc arena for every thread. glibc otherwise gives each thread that meets contention
  /// an arena of its own (up to eight per core); with the D-Bus reader threads and the
  /// concurrency pool that is four or five arenas, each keeping its own free pages, so a burst
  /// (a flood of random addresses) left several megabytes behind in arenas that `malloc_trim`
  /// could only partly return. The daemon's allocation rate is far too low for the shared lock
  /// to matter. Must run before a second thread allocates (first thing in `main`).
  /// Returns whether glibc took the setting.
  @discardableResult
  public static func useOneArena() -> Bool {
    mallopt?(arenaMaxParameter, 1) == 1
  }

  /// Large blocks (`largeBlock` and up) in mappings of their own, handed back whole when freed.
  /// glibc starts at this very threshold but moves it: each large block freed raises it (up to
  /// 32 MiB), and the trim threshold with it, so after a burst (a flood's batches and tables) the
  /// next large blocks came from the heap and left it fragmented. Setting it pins both. With a
  /// flood of 100,000 addresses: a peak of 22.3-23.4 MB instead of 25.0, and 16.7-17.3 MB after
  /// it instead of 18.3 (docs/PERFORMANCE.md). Steady running allocates no block this large.
  /// Returns whether glibc took the setting.
  @discardableResult
  public static func mapLargeBlocks() -> Bool {
    mallopt?(mmapThresholdParameter, Int32(largeBlock)) == 1
  }

  /// `malloc_trim(0)`: returns the free pages of every arena to the system. Returns whether any
  /// memory was returned.
  @discardableResult
  public static func returnFreedMemory() -> Bool {
    mallocTrim?(0) == 1
  }
}
