import CDBus

/// libdbus's side of `WireMessage` (kept out of Wire.swift, which the fuzz harness builds
/// without libdbus).
extension WireMessage {
  /// Runs `body` over `message` as bytes. libdbus keeps a message's header and body apart, so
  /// they are marshalled into one buffer: a single allocation, freed as soon as `body` returns.
  /// The corresponding C function is `dbus_message_marshal`.
  static func withMarshalled<T>(_ message: OpaquePointer, _ body: (borrowing WireMessage) throws -> T) throws
    -> T
  {
    var buffer: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    guard dbus_message_marshal(message, &buffer, &length) != 0, let buffer else {
      throw DBusError(.noMemory, "dbus_message_marshal failed")
    }
    defer { dbus_free(buffer) }
    let bytes = UnsafeRawBufferPointer(start: buffer, count: Int(length))
    guard let header = Wire.header(bytes) else {
      throw DBusError(.invalidArgs, "a reply of \(length) bytes whose header could not be read in place")
    }
    return try body(WireMessage(header: header, bytes: bytes))
  }

  /// Runs `body` over a method return carrying `values`, as a decoder would receive it: for tests
  /// and benchmarks of in-place decoders.
  public static func withReply<T>(carrying values: [DBusValue], _ body: (borrowing WireMessage) throws -> T)
    throws -> T
  {
    let message = try Message.signal(path: "/", interface: "org.example.Reply", member: "Reply")
    try message.append(values)
    return try withMarshalled(message.pointer, body)
  }
}

extension WireSignal {
  /// A signal as the bus sends it, marshalled by libdbus with `serial`: for tests and benchmarks
  /// of in-place decoders (`withSignal`).
  public static func marshalled(
    path: ObjectPath, interface: InterfaceName, member: MemberName, _ values: [DBusValue], serial: UInt32 = 1
  ) throws -> [UInt8] {
    let message = try Message.signal(path: path, interface: interface, member: member)
    try message.append(values)
    return try message.marshalled(serial: serial)
  }
}

extension Message {
  /// The message as it goes on the wire, with `serial`.
  /// The corresponding C functions are `dbus_message_set_serial` and `dbus_message_marshal`.
  func marshalled(serial: UInt32) throws(DBusError) -> [UInt8] {
    dbus_message_set_serial(pointer, serial)
    var buffer: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    guard dbus_message_marshal(pointer, &buffer, &length) != 0, let buffer else {
      throw DBusError(.noMemory, "dbus_message_marshal failed")
    }
    defer { dbus_free(buffer) }
    return Array(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
  }
}
