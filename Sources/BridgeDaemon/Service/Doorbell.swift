import BeaconCore
import DBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A wake-up that coalesces: any thread may `ring()`, one task `wait()`s. Rings while nobody
/// waits are kept as one, so the next `wait()` returns at once. The daemon's services wait on
/// one instead of waking on a period, so an idle daemon stays asleep (at most one wake-up a
/// second).
final class Doorbell: Sendable {
  private let state = Mutex<(rung: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

  func ring() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      guard let waiter = state.waiter else {
        state.rung = true
        return nil
      }
      state.waiter = nil
      return waiter
    }
    waiter?.resume()
  }

  /// A ring is kept for the next `wait()`.
  var isRung: Bool { state.withLock { $0.rung } }

  /// Returns after the next ring (or at once for one that came meanwhile), or when the task is
  /// cancelled.
  func wait() async {
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let now = state.withLock { state -> Bool in
          if state.rung || Task.isCancelled {
            state.rung = false
            return true
          }
          state.waiter = continuation
          return false
        }
        if now { continuation.resume() }
      }
    } onCancel: {
      ring()
    }
  }
}

/// Rings a doorbell whenever a file in a directory is written, created, removed or renamed into it
/// (inotify), from a thread of its own that sleeps in `poll` until then.
final class DirectoryWatch: Sendable {
  private let inotifyFD: Int32
  private let wakeRead: Int32
  private let wakeWrite: Int32
  private let finished = DispatchSemaphore(value: 0)
  private let prefix: [UInt8]

  /// nil, with the reason, when inotify cannot watch `directory` (no such directory, or the
  /// system's watch limit reached).
  /// Only changes to files whose name starts with `prefix` ring the bell (all when it is empty).
  static func start(_ directory: String, prefix: String = "", ringing bell: Doorbell)
    -> Result<DirectoryWatch, WatchError>
  {
    let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    guard fd >= 0 else { return .failure(WatchError(errno: errno)) }
    let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE)
    guard inotify_add_watch(fd, directory, mask) >= 0 else {
      let error = WatchError(errno: errno)
      close(fd)
      return .failure(error)
    }
    var pipeFDs: [Int32] = [-1, -1]
    guard pipe(&pipeFDs) == 0 else {
      let error = WatchError(errno: errno)
      close(fd)
      return .failure(error)
    }
    for pipeFD in pipeFDs { _ = fcntl(pipeFD, F_SETFD, FD_CLOEXEC) }
    let watch = DirectoryWatch(
      inotifyFD: fd, wakeRead: pipeFDs[0], wakeWrite: pipeFDs[1], prefix: Array(prefix.utf8))
    OSThread.detach(name: "directory-watch") { watch.run(bell) }
    return .success(watch)
  }

  private init(inotifyFD: Int32, wakeRead: Int32, wakeWrite: Int32, prefix: [UInt8]) {
    self.prefix = prefix
    self.inotifyFD = inotifyFD
    self.wakeRead = wakeRead
    self.wakeWrite = wakeWrite
  }

  private func run(_ bell: Doorbell) {
    var fds = [
      pollfd(fd: inotifyFD, events: Int16(POLLIN), revents: 0),
      pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
    ]
    var events = [UInt8](repeating: 0, count: 4096)
    while true {
      fds[0].revents = 0
      fds[1].revents = 0
      if poll(&fds, 2, -1) < 0 {
        if errno == EINTR { continue }
        break
      }
      if fds[1].revents != 0 { break }
      // Drain the events; ring once if any names a watched file.
      var matched = false
      while true {
        let count = events.withUnsafeMutableBytes { read(inotifyFD, $0.baseAddress, $0.count) }
        guard count > 0 else { break }
        if !matched { matched = Self.names(events[..<count], startingWith: prefix) }
      }
      if matched { bell.ring() }
    }
    close(inotifyFD)
    close(wakeRead)
    close(wakeWrite)
    finished.signal()
  }

  /// Whether any `struct inotify_event` in `buffer` names a file whose name starts with
  /// `prefix` (an empty prefix matches every event).
  static func names(_ buffer: ArraySlice<UInt8>, startingWith prefix: [UInt8]) -> Bool {
    let header = MemoryLayout<inotify_event>.size
    var at = buffer.startIndex
    while at + header <= buffer.endIndex {
      let length = buffer.withUnsafeBytes { bytes in
        Int(bytes.loadUnaligned(fromByteOffset: at - buffer.startIndex + 12, as: UInt32.self))
      }
      let name = buffer[(at + header)..<min(at + header + length, buffer.endIndex)]
      if prefix.isEmpty || name.starts(with: prefix) { return true }
      at += header + length
    }
    return false
  }

  /// Stops the thread and closes the descriptors; returns once it has.
  func stop() {
    var one: UInt8 = 1
    _ = write(wakeWrite, &one, 1)
    finished.wait()
  }

  struct WatchError: Error, CustomStringConvertible {
    let errno: Int32
    /// Watching is reading the directory, so a missing one reads as such.
    var description: String { SystemError.words(errno, during: .reading) }
  }
}
