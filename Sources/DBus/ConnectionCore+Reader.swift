import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The reader thread: libdbus's watches, the poll loop and the wake-up pipe.
extension ConnectionCore {
  // MARK: Callbacks from libdbus (may run with the connection lock held: no libdbus calls here)

  func addWatch(_ watch: OpaquePointer) {
    let entry = Watch(
      pointer: watch, fd: dbus_watch_get_unix_fd(watch), flags: dbus_watch_get_flags(watch),
      enabled: dbus_watch_get_enabled(watch) != 0)
    watches.withLock { $0.append(entry) }
    wake()
  }

  func removeWatch(_ watch: OpaquePointer) {
    watches.withLock { $0.removeAll { $0.pointer == watch } }
    wake()
  }

  func toggleWatch(_ watch: OpaquePointer) {
    let enabled = dbus_watch_get_enabled(watch) != 0
    watches.withLock { list in
      for index in list.indices where list[index].pointer == watch { list[index].enabled = enabled }
    }
    wake()
  }

  /// Interrupts the reader's `poll`. Callbacks that libdbus makes on the reader thread itself
  /// (dispatch status, watch toggles while reading) need no wake-up: the loop re-reads watches and
  /// dispatch status before it polls again. Skipping them halves the wake-ups per message.
  func wake() {
    if readerThread.load(ordering: .relaxed) == UInt(pthread_self()) { return }
    var one: UInt8 = 1
    _ = write(wakeWriteFD, &one, 1)  // a full pipe already means "wake up"
  }

  // MARK: The reader thread

  func runLoop() {
    readerThread.store(UInt(pthread_self()), ordering: .relaxed)
    var fds: [pollfd] = []
    while !state.withLock({ $0.closing }) {
      let active = watches.withLock { $0.filter(\.enabled) }
      fds.removeAll(keepingCapacity: true)
      fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
      for watch in active {
        var events: Int16 = 0
        if watch.flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
        if watch.flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
        fds.append(pollfd(fd: watch.fd, events: events, revents: 0))
      }
      let ready = poll(&fds, nfds_t(fds.count), -1)
      if ready < 0 {
        if errno == EINTR { continue }
        break
      }
      wakeUps.add(1, ordering: .relaxed)
      if fds[0].revents != 0 {
        var drain = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while read(wakeFD, &drain, 32) == 32 {}
      }
      for (index, watch) in active.enumerated() {
        let revents = fds[index + 1].revents
        if revents != 0 { handle(watch, revents: revents) }
      }
      dispatchQueued()
      if state.withLock({ $0.closedReason != nil }) { break }
      if batchInterval > .zero { ReaderThread.sleep(for: batchInterval) }
    }
    shutDown()
  }

  /// Reads until the socket is empty (bounded), so that one wake-up takes in every message
  /// already there. libdbus reads at most a few KiB per `dbus_watch_handle`.
  /// The corresponding C function is `dbus_watch_handle`.
  func handle(_ watch: Watch, revents: Int16) {
    var flags: UInt32 = 0
    if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
    if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
    if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
    if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
    _ = dbus_watch_handle(watch.pointer, flags)
    guard flags == DBUS_WATCH_READABLE.rawValue else { return }
    socketReads.add(1, ordering: .relaxed)
    for _ in 0..<256 {
      var probe = pollfd(fd: watch.fd, events: Int16(POLLIN), revents: 0)
      guard poll(&probe, 1, 0) == 1, probe.revents == Int16(POLLIN) else { return }
      guard watches.withLock({ $0.contains { $0.pointer == watch.pointer && $0.enabled } }) else { return }
      _ = dbus_watch_handle(watch.pointer, DBUS_WATCH_READABLE.rawValue)
      socketReads.add(1, ordering: .relaxed)
    }
  }

  /// Dispatches every queued message (each passes through `filter`), then hands each subscriber
  /// its batch.
  /// The corresponding C function is `dbus_connection_dispatch`.
  func dispatchQueued() {
    while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    for sink in readerSinks where sink.flush() {
      signalBatches.add(1, ordering: .relaxed)
    }
  }

  /// Reader thread only.
  func refreshReaderSinks() {
    let version = sinksVersion.load(ordering: .acquiring)
    guard version != readerSinksVersion else { return }
    readerSinks = state.withLock { Array($0.subscribers.values) }
    readerSinksVersion = version
  }

}

/// What the reader threads share.
enum ReaderThread {
  /// Sleeps the calling thread (never a cooperative one: readers have threads of their own).
  static func sleep(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
  }
}
