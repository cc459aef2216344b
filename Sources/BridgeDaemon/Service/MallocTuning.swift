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

  /// `malloc_trim(0)`: returns the free pages of every arena to the system. Returns whether any
  /// memory was returned.
  @discardableResult
  public static func returnFreedMemory() -> Bool {
    mallocTrim?(0) == 1
  }
}
