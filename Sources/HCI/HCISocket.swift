import BeaconCore
import CBlueZ
import HCIParsing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A raw HCI socket bound to one adapter, filtered to the events a scanner reads.
///
/// Owns its descriptor: `close()` (or deinit) closes it exactly once. Used from one thread.
public final class HCISocket: HCITransport {
  public let adapterName: String
  private var fd: Int32
  private var buffer = [UInt8](repeating: 0, count: 1024)

  /// Opens `hciN`: socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI), bind to the device on the raw
  /// channel, an HCI filter passing Command Complete, Command Status and LE Meta events, and a
  /// larger receive buffer so a batch of reports waits in the kernel rather than being dropped.
  /// Checks that the adapter is up (HCI_UP in hci_devinfo's flags).
  public init(adapter: UInt16) throws(HCIScanError) {
    adapterName = "hci\(adapter)"
    fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
    guard fd >= 0 else { throw Self.lastError("socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)", adapterName) }
    do {
      try configure(adapter: adapter)
    } catch {
      close()
      throw error
    }
  }

  private func configure(adapter: UInt16) throws(HCIScanError) {
    // The corresponding C function is `hci_devinfo`; it fails with ENODEV for a missing adapter.
    var info = hci_dev_info()
    guard hci_devinfo(Int32(adapter), &info) == 0 else { throw Self.lastError("hci_devinfo", adapterName) }
    guard info.flags & (1 << UInt32(HCI_UP)) != 0 else {
      throw HCIScanError(.adapterDown, HCIScanError.adapterDownAdvice(adapterName))
    }
    var address = sockaddr_hci()
    address.hci_family = sa_family_t(AF_BLUETOOTH)
    address.hci_dev = adapter
    address.hci_channel = UInt16(HCI_CHANNEL_RAW)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
      }
    }
    guard bound == 0 else { throw Self.lastError("bind", adapterName) }

    // hci_filter_set_ptype / hci_filter_set_event from hci_lib.h, written out.
    var filter = hci_filter()
    filter.type_mask = 1 << UInt32(HCI_EVENT_PKT)
    var events: (UInt32, UInt32) = (0, 0)
    for code in [HCIEvent.commandCompleteCode, HCIEvent.commandStatusCode, HCIEvent.leMetaCode] {
      if code < 32 { events.0 |= 1 << UInt32(code) } else { events.1 |= 1 << UInt32(code - 32) }
    }
    filter.event_mask = events
    guard setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size)) == 0 else {
      throw Self.lastError("setsockopt(HCI_FILTER)", adapterName)
    }
    var size: Int32 = 1 << 20
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
  }

  deinit { close() }

  public func close() {
    guard fd >= 0 else { return }
    _ = Glibc.close(fd)
    fd = -1
  }

  public func send(_ packet: [UInt8]) throws(HCIScanError) {
    while true {
      let n = packet.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      if n == packet.count { return }
      if n < 0 && errno == EINTR { continue }
      throw Self.lastError("write HCI command", adapterName)
    }
  }

  public func receive(timeoutMilliseconds: Int32) throws(HCIScanError) -> [[UInt8]] {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&poller, 1, timeoutMilliseconds)
    if ready < 0 {
      if errno == EINTR { return [] }
      throw Self.lastError("poll", adapterName)
    }
    guard ready > 0 else { return [] }
    if poller.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 && poller.revents & Int16(POLLIN) == 0 {
      throw HCIScanError(.adapterDown, "\(adapterName) went away (the socket reported an error or hang-up)")
    }
    // Drain what is queued without blocking: one wake-up, many packets.
    var packets: [[UInt8]] = []
    while packets.count < 4096 {
      let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
      if n < 0 {
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { break }
        throw Self.lastError("read HCI event", adapterName)
      }
      if n == 0 { break }
      // Each read is one packet with its H4 indicator; the filter passes only events.
      if buffer[0] == H4PacketType.event && n > 1 { packets.append(Array(buffer[1..<n])) }
    }
    return packets
  }

  static func lastError(_ operation: String, _ adapter: String) -> HCIScanError {
    let code = errno
    return HCIScanError.from(
      errno: code, operation: operation, adapter: adapter, message: SystemError.words(code))
  }
}
