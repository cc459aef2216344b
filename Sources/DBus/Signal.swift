/// A received signal, decoded: plain values, no `DBusMessage*` behind it.
public struct Signal: Hashable, Sendable {
  /// The sender's unique name (`:1.42`); libdbus's local `Disconnected` has none.
  public var sender: BusName?
  public var path: ObjectPath
  public var interface: InterfaceName
  public var member: MemberName
  public var body: [DBusValue]

  public init(
    sender: BusName?, path: ObjectPath, interface: InterfaceName, member: MemberName, body: [DBusValue]
  ) {
    self.sender = sender
    self.path = path
    self.interface = interface
    self.member = member
    self.body = body
  }
}
