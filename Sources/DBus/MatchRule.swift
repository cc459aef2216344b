import CDBus

#if canImport(Glibc)
  import Glibc
#endif

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
}

/// A set of match rules compiled once, as both readers check a received signal against them:
/// `SignalSocket` on the header it reads in place, `ConnectionCore` on libdbus's message. Every
/// key the rule names is checked, `arg0` included, but a well-known sender: a signal's sender is
/// always a unique name, and the bus resolves a well-known one when it routes (see `MatchRule`).
///
/// The keys are C strings with their lengths, allocated once, so that matching compares lengths
/// and then bytes in place (bridging each `String` cost more than the rest of a match).
/// `@unchecked Sendable`: immutable after `init`; the memory is freed in `deinit`.
final class CompiledRules: @unchecked Sendable {
  let rules: [MatchRule]
  private let compiled: UnsafeMutableBufferPointer<CompiledMatch>

  init(_ rules: [MatchRule]) {
    self.rules = rules
    compiled = .allocate(capacity: rules.count)
    _ = compiled.initialize(from: rules.map(CompiledMatch.init))
  }

  deinit {
    for match in compiled { match.release() }
    compiled.deallocate()
  }

  var count: Int { compiled.count }

  /// Whether rule `index` matches the message `bytes`, whose header is `header`.
  @inline(__always) func matches(_ index: Int, _ header: Wire.Header, _ bytes: UnsafeRawBufferPointer) -> Bool
  {
    compiled[index].matches(header, bytes)
  }

  /// Whether any rule matches the message `bytes`, whose header is `header`.
  func matches(_ header: Wire.Header, _ bytes: UnsafeRawBufferPointer) -> Bool {
    compiled.contains { $0.matches(header, bytes) }
  }

  /// Whether any rule matches a message libdbus has read.
  /// The corresponding C functions are `dbus_message_get_member` and its siblings.
  func matches(_ message: OpaquePointer) -> Bool {
    let member = dbus_message_get_member(message)
    let interface = dbus_message_get_interface(message)
    let path = dbus_message_get_path(message)
    let sender = dbus_message_get_sender(message)
    return compiled.contains {
      $0.matches(sender: sender, path: path, interface: interface, member: member) && $0.matchesArg0(message)
    }
  }
}

/// One rule's keys (see `CompiledRules`). The member is compared first: it tells the rules of
/// one interface apart, mostly by its length alone.
struct CompiledMatch {
  /// One key: nil `text` matches anything.
  struct Key {
    let text: UnsafeMutablePointer<CChar>?
    let count: Int

    init(_ text: String?) {
      self.text = text.map { strdup($0) }
      count = self.text.map { strlen($0) } ?? 0
    }

    /// Whether `count` bytes at `start` are this key.
    @inline(__always) func matches(_ start: UnsafeRawPointer, count: Int) -> Bool {
      guard let text else { return true }
      return count == self.count && Wire.same(start, text, count: count)
    }

    /// Whether the header's field `span` is this key.
    @inline(__always) func matches(_ span: Wire.Span, in base: UnsafeRawPointer) -> Bool {
      guard text != nil else { return true }
      return span.isPresent && matches(base + Int(span.at), count: Int(span.count))
    }

    /// Whether a C string (a field as libdbus holds it) is this key.
    func matches(_ field: UnsafePointer<CChar>?) -> Bool {
      guard text != nil else { return true }
      guard let field else { return false }
      return matches(field, count: strlen(field))
    }

    /// Whether the path `count` bytes at `start` is this namespace or below it.
    func contains(path start: UnsafeRawPointer, count: Int) -> Bool {
      guard let text else { return true }
      guard count >= self.count, Wire.same(start, text, count: self.count) else { return false }
      return count == self.count
        || start.load(fromByteOffset: self.count, as: UInt8.self) == UInt8(ascii: "/")
    }
  }

  let sender: Key
  let interface: Key
  let member: Key
  let path: Key
  let pathNamespace: Key
  let arg0: Key

  init(_ rule: MatchRule) {
    sender = Key(rule.sender.flatMap { $0.isUnique || $0 == .bus ? $0.rawValue : nil })
    interface = Key(rule.interface?.rawValue)
    member = Key(rule.member?.rawValue)
    path = Key(rule.path?.rawValue)
    // "/" holds every path.
    pathNamespace = Key(rule.pathNamespace.flatMap { $0.rawValue == "/" ? nil : $0.rawValue })
    arg0 = Key(rule.arg0)
  }

  /// A signal read in place: its header and, for `arg0`, its first argument when it is a string.
  @inline(__always) func matches(_ header: Wire.Header, _ bytes: UnsafeRawBufferPointer) -> Bool {
    let base = header.base
    guard member.matches(header.memberSpan, in: base), interface.matches(header.interfaceSpan, in: base),
      path.matches(header.pathSpan, in: base), sender.matches(header.senderSpan, in: base)
    else { return false }
    if pathNamespace.text != nil {
      let span = header.pathSpan
      guard span.isPresent, pathNamespace.contains(path: base + Int(span.at), count: Int(span.count)) else {
        return false
      }
    }
    if arg0.text != nil {
      guard header.signature?.first == UInt8(ascii: "s") else { return false }
      var body = WireReader(
        base: bytes.baseAddress!, count: bytes.count, bigEndian: bytes[0] == UInt8(ascii: "B"))
      body.position = header.bodyStart
      guard let first = body.string(), arg0.matches(first.pointer, count: first.count) else { return false }
    }
    return true
  }

  /// A signal libdbus has read, but for `arg0` (`matchesArg0`).
  func matches(
    sender signalSender: UnsafePointer<CChar>?, path signalPath: UnsafePointer<CChar>?,
    interface signalInterface: UnsafePointer<CChar>?, member signalMember: UnsafePointer<CChar>?
  ) -> Bool {
    guard member.matches(signalMember), interface.matches(signalInterface), path.matches(signalPath),
      sender.matches(signalSender)
    else { return false }
    guard pathNamespace.text != nil else { return true }
    guard let signalPath else { return false }
    return pathNamespace.contains(path: signalPath, count: strlen(signalPath))
  }

  /// Whether a message libdbus has read has this rule's `arg0` (any, when the rule has none).
  /// The corresponding C function is `dbus_message_iter_get_basic`.
  func matchesArg0(_ message: OpaquePointer) -> Bool {
    guard arg0.text != nil else { return true }
    var iter = DBusMessageIter()
    guard dbus_message_iter_init(message, &iter) != 0,
      dbus_message_iter_get_arg_type(&iter) == TypeCode.string
    else { return false }
    var basic = DBusBasicValue()
    dbus_message_iter_get_basic(&iter, &basic)
    return arg0.matches(basic.str.map { UnsafePointer($0) })
  }

  func release() {
    for key in [sender, interface, member, path, pathNamespace, arg0] { free(key.text) }
  }
}

extension String {
  fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
    guard contains(target) else { return self }
    return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
  }
}
