import CDBus
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// Sockets and SASL for `SignalSocket`.
enum SocketSetup {
  /// Connects to the first `unix:` entry of a D-Bus address.
  /// The corresponding C functions are `dbus_parse_address` and `dbus_address_entry_get_value`.
  static func connect(_ address: String) throws(DBusError) -> Int32 {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    var entries: UnsafeMutablePointer<OpaquePointer?>?
    var count: Int32 = 0
    guard dbus_parse_address(address, &entries, &count, &error) != 0, let entries else {
      throw DBusError(consuming: &error, fallback: .badAddress, "cannot parse the bus address \(address)")
    }
    defer { dbus_address_entries_free(entries) }
    for index in 0..<Int(count) {
      guard let entry = entries[index],
        let method = dbus_address_entry_get_method(entry).map({ String(cString: $0) }), method == "unix"
      else { continue }
      if let path = dbus_address_entry_get_value(entry, "path").map({ String(cString: $0) }) {
        return try open(path: path, abstract: false)
      }
      if let name = dbus_address_entry_get_value(entry, "abstract").map({ String(cString: $0) }) {
        return try open(path: name, abstract: true)
      }
    }
    throw DBusError(.notSupported, "no unix: socket in the bus address \(address)")
  }

  private static func open(path: String, abstract: Bool) throws(DBusError) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw DBusError(.noServer, "socket: errno \(errno)") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    let offset = abstract ? 1 : 0
    guard bytes.count + offset < capacity else {
      close(fd)
      throw DBusError(.badAddress, "socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.initializeMemory(as: UInt8.self, repeating: 0)
      for (index, byte) in bytes.enumerated() { raw[index + offset] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + offset + bytes.count + (abstract ? 0 : 1))
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
    }
    guard result == 0 else {
      let code = errno
      close(fd)
      throw DBusError(
        .noServer, "cannot connect to \(abstract ? "@" : "")\(path): \(String(cString: strerror(code)))")
    }
    return fd
  }

  /// SASL EXTERNAL with our uid, then BEGIN (D-Bus specification, "Authentication Protocol").
  static func authenticate(_ fd: Int32, timeout: Duration) throws(DBusError) {
    let uid = String(getuid()).utf8.map { String($0, radix: 16) }.joined()
    try write(fd, Array("\0AUTH EXTERNAL \(uid)\r\n".utf8))
    var line: [UInt8] = []
    let deadline = ContinuousClock.now + timeout
    while !(line.count >= 2 && line[line.count - 2] == 13 && line[line.count - 1] == 10) {
      try waitReadable(fd, until: deadline)
      var byte: UInt8 = 0
      let got = read(fd, &byte, 1)
      guard got == 1 else {
        throw DBusError(.disconnected, "the bus closed the connection while authenticating")
      }
      line.append(byte)
      guard line.count < 512 else { throw DBusError(.authFailed, "the bus sent an over-long SASL line") }
    }
    let reply = String(decoding: line.dropLast(2), as: UTF8.self)
    guard reply.hasPrefix("OK ") else { throw DBusError(.authFailed, "the bus refused EXTERNAL: \(reply)") }
    try write(fd, Array("BEGIN\r\n".utf8))
  }

  static func write(_ fd: Int32, _ bytes: [UInt8]) throws(DBusError) {
    var sent = 0
    while sent < bytes.count {
      let count = bytes.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
      }
      if count < 0 {
        if errno == EINTR { continue }
        throw DBusError(.disconnected, "cannot write to the bus: errno \(errno)")
      }
      sent += count
    }
  }

  static func waitReadable(_ fd: Int32, until deadline: ContinuousClock.Instant) throws(DBusError) {
    while true {
      let left = ContinuousClock.now.duration(to: deadline)
      guard left > .zero else { throw DBusError(.noReply, "the bus did not answer in time") }
      var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(
        clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
      let ready = poll(&probe, 1, milliseconds)
      if ready > 0 { return }
      if ready < 0, errno != EINTR { throw DBusError(.failed, "poll failed: errno \(errno)") }
    }
  }

  /// A method call to the bus driver, marshalled by libdbus with our own serial
  /// (`Message.marshalled(serial:)`).
  static func busCall(_ member: MemberName, _ arguments: [DBusValue], serial: UInt32) throws(DBusError)
    -> [UInt8]
  {
    let message = try Message.methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: member)
    try message.append(arguments)
    return try message.marshalled(serial: serial)
  }
}
