import BeaconCore
import DBus

/// The reply of `GetManagedObjects` (`a{oa{sa{sv}}}`), read in place one object at a time: each
/// Device1 becomes a `DeviceRecord` straight away, every other interface goes into the
/// `ObjectTree`. The same result as `ObjectTree(managedObjects:)` followed by
/// `DeviceMirror.reseed(from:)`, without the `DBusValue` tree of the whole reply: with a thousand
/// devices cached in BlueZ, that tree was about 3 MB of small allocations built and freed around
/// the mirror's records, and the holes it left stayed in the daemon's heap (docs/PERFORMANCE.md).
struct ManagedObjects: Sendable {
  /// Every object's interfaces but Device1, as `ObjectTree` keeps them (an object whose only
  /// interface was Device1 is not in it).
  var tree = ObjectTree()
  /// The Device1 objects that name an address, keyed as the mirror keys them.
  var devices: [DeviceKey: DeviceRecord] = [:]

  static var signature: WireName { BlueZ.Wire.managedObjects }
  static var device: WireName { BlueZ.Wire.deviceInterface }

  /// Reads the reply; throws `DBusError` (`.invalidArgs`) naming what does not fit, and then
  /// returns nothing at all (a caller keeps what it had).
  init(_ reply: borrowing WireMessage, at time: ContinuousClock.Instant) throws(DBusError) {
    guard reply.signature(is: Self.signature) else {
      throw DBusError(
        .invalidArgs, "GetManagedObjects replied with signature '\(reply.signature)', not 'a{oa{sa{sv}}}'")
    }
    var body = reply.body
    guard let end = body.beginArray(elementAlignment: 8) else {
      throw Self.malformed("its object array runs past the end of the message", at: body)
    }
    // The paths read so far, to find a repeated one.
    var paths: Set<ObjectPath> = []
    while body.position < end {
      try read(object: &body, at: time, paths: &paths)
    }
    guard body.position == end else { throw Self.malformed("its object array overruns its length", at: body) }
  }

  static func malformed(_ what: String, at reader: WireReader) -> DBusError {
    DBusError(.invalidArgs, "malformed GetManagedObjects reply: \(what) (at byte \(reader.position))")
  }

  /// One `{oa{sa{sv}}}`.
  private mutating func read(
    object body: inout WireReader, at time: ContinuousClock.Instant, paths: inout Set<ObjectPath>
  ) throws(DBusError) {
    guard body.align(8), let pathText = body.string() else {
      throw Self.malformed("an object's path does not fit", at: body)
    }
    let path = ObjectPath(pathText.string)
    guard let end = body.beginArray(elementAlignment: 8) else {
      throw Self.malformed("the interfaces of \(path) run past the end of the message", at: body)
    }
    var interfaces: [InterfaceName: ObjectTree.Properties] = [:]
    var device: DeviceChanges?
    while body.position < end {
      guard body.align(8), let name = body.string() else {
        throw Self.malformed("an interface name of \(path) does not fit", at: body)
      }
      let isDevice = name.equals(Self.device)
      let interface = isDevice ? BlueZ.deviceInterface : InterfaceName(name.string)
      guard let propertiesEnd = body.beginArray(elementAlignment: 8) else {
        throw Self.malformed("the properties of \(interface) on \(path) run past the end", at: body)
      }
      if isDevice {
        // The one reader of Device1's properties; a repeated interface keeps its last entry.
        var changes = DeviceChanges()
        switch DevicePropertyReader.read(&body, end: propertiesEnd, into: &changes) {
        case .read: device = changes
        case .nameDoesNotFit, .declined:
          throw Self.malformed("a property name of \(interface) on \(path) does not fit", at: body)
        case .valueDoesNotFit(let property):
          throw Self.malformed("\(interface).\(property.string) on \(path) does not fit its type", at: body)
        }
      } else {
        interfaces[interface] = try Self.properties(of: interface, on: path, &body, end: propertiesEnd)
      }
      guard body.position == propertiesEnd else {
        throw Self.malformed("the properties of \(interface) on \(path) overrun their length", at: body)
      }
    }
    guard body.position == end else {
      throw Self.malformed("the interfaces of \(path) overrun their length", at: body)
    }
    // A path the reply repeats: its last entry wins, as in `ObjectTree`. Only a repeat costs a
    // search.
    if !paths.insert(path).inserted, let repeated = devices.first(where: { $0.value.path == path })?.key {
      devices[repeated] = nil
    }
    if device != nil, interfaces.isEmpty {
      tree.remove(path)
    } else {
      tree.set(interfaces, at: path)
    }
    if let device, let record = DeviceRecord(path: path, changes: device, at: time) {
      devices[DeviceKey(path: path, address: record.address)] = record
    }
  }

  /// Another interface's `a{sv}`, into the tree's `DBusValue`s.
  private static func properties(
    of interface: InterfaceName, on path: ObjectPath, _ body: inout WireReader, end: Int
  ) throws(DBusError) -> ObjectTree.Properties {
    var properties: ObjectTree.Properties = [:]
    while body.position < end {
      guard body.align(8), let property = body.string() else {
        throw Self.malformed("a property name of \(interface) on \(path) does not fit", at: body)
      }
      guard let value = body.variant() else {
        throw Self.malformed("\(interface).\(property.string) on \(path) does not fit its type", at: body)
      }
      // A repeated name keeps its last value, as in `ObjectTree`.
      properties[property.string] = value.unwrapped
    }
    return properties
  }
}
