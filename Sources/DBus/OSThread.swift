#if canImport(Glibc)
  import Glibc
#endif

/// A detached POSIX thread with a name, for the readers and watchers that block in `poll(2)`:
/// what `Foundation.Thread` did for them, without Foundation, which the daemon does not link
/// (docs/PERFORMANCE.md, "Where the daemon's memory goes").
public enum OSThread {
  /// Starts `body` on a new detached thread named `name` (cut to the 15 bytes Linux keeps).
  public static func detach(name: String, _ body: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(Box(name: Array(name.utf8.prefix(15)), body: body)).toOpaque()
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
    guard result == 0 else {
      Unmanaged<Box>.fromOpaque(box).release()
      fatalError("pthread_create failed: \(result)")
    }
  }

  private final class Box {
    let name: [UInt8]
    let body: @Sendable () -> Void
    init(name: [UInt8], body: @escaping @Sendable () -> Void) {
      self.name = name
      self.body = body
    }

    /// `pthread_setname_np` is a GNU extension Swift's Glibc module leaves out; the kernel's
    /// file for the same name is /proc/thread-self/comm.
    func nameThisThread() {
      let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
      guard fd >= 0 else { return }
      _ = name.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      close(fd)
    }
  }
}
