import DBus

/// BlueZ's objects as last reported: path → interface → property → value (variants unwrapped).
///
/// One place mirrors the tree, as bleak's manager does: `GetManagedObjects` seeds it, and
/// InterfacesAdded, InterfacesRemoved and PropertiesChanged keep it current. The caller subscribes
/// to those signals *before* `GetManagedObjects`, so no change falls between the two.
public struct ObjectTree: Sendable, Equatable {
  public typealias Properties = [String: DBusValue]
  public private(set) var objects: [ObjectPath: [InterfaceName: Properties]] = [:]

  public init() {}

  /// From the reply of `GetManagedObjects` (`a{oa{sa{sv}}}`).
  public init(managedObjects: DBusValue) {
    for entry in managedObjects.dictionaryEntries ?? [] {
      guard case .objectPath(let path) = entry.key else { continue }
      objects[path] = Self.interfaces(entry.value)
    }
  }

  /// `a{sa{sv}}` → interface → properties.
  static func interfaces(_ value: DBusValue) -> [InterfaceName: Properties] {
    var out: [InterfaceName: Properties] = [:]
    for entry in value.dictionaryEntries ?? [] {
      guard let name = entry.key.string else { continue }
      out[InterfaceName(name)] = properties(entry.value)
    }
    return out
  }

  /// `a{sv}` → property → value without its variant wrapper.
  static func properties(_ value: DBusValue) -> Properties {
    var out: Properties = [:]
    for entry in value.dictionaryEntries ?? [] {
      guard let name = entry.key.string else { continue }
      out[name] = entry.value.unwrapped
    }
    return out
  }

  /// Sets an object's interfaces, as a `GetManagedObjects` entry does (`ManagedObjects`).
  mutating func set(_ interfaces: [InterfaceName: Properties], at path: ObjectPath) {
    objects[path] = interfaces
  }

  /// Forgets an object.
  mutating func remove(_ path: ObjectPath) {
    objects.removeValue(forKey: path)
  }

  public subscript(path: ObjectPath, interface: InterfaceName) -> Properties? {
    objects[path]?[interface]
  }

  /// InterfacesAdded(`o`, `a{sa{sv}}`); returns the interfaces added.
  @discardableResult
  public mutating func interfacesAdded(at path: ObjectPath, _ value: DBusValue) -> [InterfaceName] {
    let added = Self.interfaces(value)
    objects[path, default: [:]].merge(added) { old, new in old.merging(new) { $1 } }
    return Array(added.keys)
  }

  /// InterfacesRemoved(`o`, `as`); returns the properties each removed interface had.
  @discardableResult
  public mutating func interfacesRemoved(at path: ObjectPath, _ names: [String]) -> [InterfaceName:
    Properties]
  {
    var removed: [InterfaceName: Properties] = [:]
    for name in names.map({ InterfaceName($0) }) {
      if let properties = objects[path]?.removeValue(forKey: name) { removed[name] = properties }
    }
    if objects[path]?.isEmpty == true { objects.removeValue(forKey: path) }
    return removed
  }

  /// PropertiesChanged(`s`, `a{sv}`, `as`); returns the changed properties (unwrapped).
  @discardableResult
  public mutating func propertiesChanged(
    at path: ObjectPath, interface: InterfaceName, changed: DBusValue, invalidated: [String]
  ) -> Properties {
    let changes = Self.properties(changed)
    var properties = objects[path]?[interface] ?? [:]
    properties.merge(changes) { $1 }
    for name in invalidated { properties.removeValue(forKey: name) }
    objects[path, default: [:]][interface] = properties
    return changes
  }

  /// Removes one interface from an object and returns its properties.
  public mutating func take(_ interface: InterfaceName, at path: ObjectPath) -> Properties? {
    guard let properties = objects[path]?.removeValue(forKey: interface) else { return nil }
    if objects[path]?.isEmpty == true { objects.removeValue(forKey: path) }
    return properties
  }

  /// Removes one interface from every object and returns each object's properties.
  public mutating func takeAll(_ interface: InterfaceName) -> [ObjectPath: Properties] {
    var out: [ObjectPath: Properties] = [:]
    for path in objects.keys where objects[path]?[interface] != nil {
      out[path] = take(interface, at: path)
    }
    return out
  }

  /// Adapter paths, sorted (`hci0` first).
  public var adapters: [ObjectPath] {
    objects.filter { $0.value[BlueZ.adapterInterface] != nil }.keys.sorted()
  }

  /// Whether `path` is a device below `adapter` (`/org/bluez/hci0/dev_…` of `/org/bluez/hci0`).
  static func device(_ path: ObjectPath, isOf adapter: ObjectPath) -> Bool {
    path != adapter && path.isDescendant(ofOrEqualTo: adapter)
  }

  /// The adapter to scan with: the one named `name` (`hci1`), or else the first powered one.
  public func selectAdapter(named name: String?) -> ObjectPath? {
    if let name { return adapters.first { $0.lastComponent == name } }
    return adapters.first { self[$0, BlueZ.adapterInterface]?[BlueZ.Property.powered]?.bool == true }
  }
}
