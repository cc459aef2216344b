#if canImport(Glibc)
  import Glibc
#endif

/// sd_notify(3) without libsystemd: one datagram to `$NOTIFY_SOCKET` per message (READY=1,
/// WATCHDOG=1, STATUS=…, STOPPING=1, RELOADING=1). A leading `@` names an abstract socket.
/// Without `$NOTIFY_SOCKET` (not started by systemd) every call is a no-op.
public struct SystemdNotifier: Sendable {
  public let socketPath: String?
  /// Half of `$WATCHDOG_USEC`, when systemd asked for a watchdog (sd_watchdog_enabled(3)).
  public let watchdogInterval: Duration?

  public init(environment: [String: String]) {
    let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    socketPath = path
    if path != nil, let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 {
      // WATCHDOG_PID, when set, must be ours.
      if let pid = environment["WATCHDOG_PID"], Int32(pid) != getpid() {
        watchdogInterval = nil
      } else {
        watchdogInterval = .microseconds(Int64(usec / 2))
      }
    } else {
      watchdogInterval = nil
    }
  }

  /// Sends one notification; returns false when there is no socket or the send failed.
  @discardableResult
  public func notify(_ message: String) -> Bool {
    guard let socketPath else { return false }
    // Non-blocking: a manager that stops reading (its queue holds only ten datagrams) must not
    // stall the thread that notifies, which would starve the daemon's cooperative pool.
    let fd = socket(
      AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    var bytes = Array(socketPath.utf8)
    if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in bytes.enumerated() { raw[i] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
    // A full queue is retried for about half a second, then the message is dropped.
    for attempt in 0..<6 {
      let sent = message.withCString { text in
        withUnsafePointer(to: &address) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL), $0, length)
          }
        }
      }
      if sent >= 0 { return true }
      guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return false }
      usleep(UInt32(10_000 << attempt))
    }
    return false
  }
}
