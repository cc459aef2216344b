#if canImport(Glibc)
  import Glibc
#endif

/// A detached POSIX thread, named or not, for the readers and watchers that block in `poll(2)`
/// and for blocking transfers (libcurl, libmosquitto, a child process): what `Foundation.Thread`
/// did for them, without Foundation, which the daemon does not link (docs/PERFORMANCE.md,
/// "Where the daemon's memory goes"). Every thread the project starts starts here.
public enum OSThread {
  /// Starts `body` on a new detached thread named `name` (cut to the 15 bytes Linux keeps); a
  /// thread that cannot start stops the process (a reader without its thread would hang).
  public static func detach(name: String, _ body: @escaping @Sendable () -> Void) {
    let result = start(name: name, body)
    guard result == 0 else { fatalError("pthread_create failed: \(result)") }
  }

  /// Starts `body` on a new detached thread, named `name` when given; 0, or the error
  /// `pthread_create` returned (`EAGAIN`: no more threads), and then `body` never runs.
  /// The corresponding C function is `pthread_create`.
  public static func start(name: String? = nil, _ body: @escaping @Sendable () -> Void) -> Int32 {
    let box = Unmanaged.passRetained(Box(name: name.map { Array($0.utf8.prefix(15)) }, body: body)).toOpaque()
    var thread = pthread_t()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let result = pthread_create(
      &thread, &attributes,
      { context in
        let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
        box.nameThisThread()
        box.body()
        return nil
      }, box)
    pthread_attr_destroy(&attributes)
    if result != 0 { Unmanaged<Box>.fromOpaque(box).release() }
    return result
  }

  private final class Box {
    let name: [UInt8]?
    let body: @Sendable () -> Void
    init(name: [UInt8]?, body: @escaping @Sendable () -> Void) {
      self.name = name
      self.body = body
    }

    /// `pthread_setname_np` is a GNU extension Swift's Glibc module leaves out; the kernel's
    /// file for the same name is /proc/thread-self/comm.
    func nameThisThread() {
      guard let name else { return }
      let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
      guard fd >= 0 else { return }
      _ = name.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      close(fd)
    }
  }
}
