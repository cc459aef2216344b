/// A match rule for `AddMatch`, restricted to the keys this library filters on locally as well.
///
/// The bus routes signals by the rule; the connection then hands each signal only to the
/// subscriptions whose rules it matches. A well-known `sender` (such as `org.bluez`) is resolved by
/// the bus, not locally: a signal's sender is always a unique name, so the local check ignores a
/// well-known sender. Callers that care (the BlueZ source does) track the owner themselves.
public struct MatchRule: Hashable, Sendable, CustomStringConvertible {
  public var sender: BusName?
  public var interface: InterfaceName?
  public var member: MemberName?
  public var path: ObjectPath?
  public var pathNamespace: ObjectPath?
  /// The first argument, when it is a string (e.g. the name in NameOwnerChanged).
  public var arg0: String?

  public init(
    sender: BusName? = nil, interface: InterfaceName? = nil, member: MemberName? = nil,
    path: ObjectPath? = nil, pathNamespace: ObjectPath? = nil, arg0: String? = nil
  ) {
    self.sender = sender
    self.interface = interface
    self.member = member
    self.path = path
    self.pathNamespace = pathNamespace
    self.arg0 = arg0
  }

  /// The rule as the bus reads it: `type='signal',sender='org.bluez',…`.
  public var rawValue: String {
    var parts = ["type='signal'"]
    func add(_ key: String, _ value: String?) {
      guard let value else { return }
      // D-Bus specification, "Match Rules": inside quotes nothing is special, so an apostrophe
      // closes the quote, is escaped, and reopens it.
      let escaped = value.replacingOccurrences(of: "'", with: "'\\''")
      parts.append("\(key)='\(escaped)'")
    }
    add("sender", sender?.rawValue)
    add("interface", interface?.rawValue)
    add("member", member?.rawValue)
    add("path", path?.rawValue)
    add("path_namespace", pathNamespace?.rawValue)
    add("arg0", arg0)
    return parts.joined(separator: ",")
  }

  public var description: String { rawValue }

  /// Whether a received signal satisfies this rule's header keys (all but a well-known sender),
  /// compared as libdbus holds them, without copying.
  func matchesHeader(
    sender signalSender: UnsafePointer<CChar>?, path signalPath: UnsafePointer<CChar>?,
    interface: UnsafePointer<CChar>?, member: UnsafePointer<CChar>?
  ) -> Bool {
    if let sender, sender.isUnique || sender == .bus, !CString.equal(signalSender, sender.rawValue) {
      return false
    }
    if let want = self.interface, !CString.equal(interface, want.rawValue) { return false }
    if let want = self.member, !CString.equal(member, want.rawValue) { return false }
    if let want = self.path, !CString.equal(signalPath, want.rawValue) { return false }
    if let want = pathNamespace, !CString.isPath(signalPath, inNamespace: want.rawValue) { return false }
    return true
  }

  func matchesBody(_ body: [DBusValue]) -> Bool {
    guard let arg0 else { return true }
    return body.first?.string == arg0
  }
}

extension String {
  fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
    guard contains(target) else { return self }
    return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
  }
}
