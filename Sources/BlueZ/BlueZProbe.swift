import DBus

/// A one-shot look at BlueZ, for `doctor` and support bundles: is bluetoothd on the bus, and
/// what adapters does it have.
public enum BlueZProbe {
  public struct AdapterFacts: Sendable, Hashable {
    public var name: String
    public var address: String?
    public var powered: Bool
    public var discovering: Bool
    /// AdvertisementMonitorManager1 with `or_patterns`: passive scanning is possible.
    public var passiveMonitoring: Bool

    public init(name: String, address: String?, powered: Bool, discovering: Bool, passiveMonitoring: Bool) {
      self.name = name
      self.address = address
      self.powered = powered
      self.discovering = discovering
      self.passiveMonitoring = passiveMonitoring
    }
  }

  public enum Result: Sendable {
    case unavailable(Unavailable)
    case running(owner: String, adapters: [AdapterFacts])
  }

  /// Why BlueZ cannot be asked, as a reason a caller switches on (`doctor` chooses its verdict
  /// and its fix by it); `description` is the sentence.
  public enum Unavailable: Hashable, Sendable, CustomStringConvertible {
    /// No connection to the system bus (dbus-daemon not running, or not reachable).
    case systemBusUnreachable
    /// org.bluez is not on the system bus: bluetoothd is not running.
    case bluetoothdAbsent
    /// bluetoothd owns its name but did not answer; the error, in its words.
    case bluetoothdNotAnswering(String)

    public var description: String {
      switch self {
      case .systemBusUnreachable: "the system bus cannot be reached"
      case .bluetoothdAbsent: "org.bluez is not on the system bus"
      case .bluetoothdNotAnswering(let error): "bluetoothd did not answer GetManagedObjects: \(error)"
      }
    }
  }

  public static func probe(_ connection: Connection) async -> Result {
    let owner: BusName
    do { owner = try await connection.nameOwner(of: BlueZ.service) } catch {
      return .unavailable(.bluetoothdAbsent)
    }
    do {
      let reply = try await connection.callReturningOne(
        destination: BlueZ.service, path: BlueZ.objectManagerPath, interface: .objectManager,
        member: BlueZ.Method.getManagedObjects, timeout: .seconds(5))
      let tree = ObjectTree(managedObjects: reply)
      let adapters = tree.adapters.sorted { $0.rawValue < $1.rawValue }.map { path in
        let properties = tree[path, BlueZ.adapterInterface] ?? [:]
        let monitor = tree[path, BlueZ.advertisementMonitorManagerInterface]
        return AdapterFacts(
          name: path.lastComponent, address: properties[BlueZ.Property.address]?.string,
          powered: properties[BlueZ.Property.powered]?.bool == true,
          discovering: properties[BlueZ.Property.discovering]?.bool == true,
          passiveMonitoring: monitor?[BlueZ.Property.supportedMonitorTypes]?.strings?.contains(
            BlueZ.orPatterns) == true)
      }
      return .running(owner: owner.rawValue, adapters: adapters)
    } catch {
      return .unavailable(.bluetoothdNotAnswering("\(error)"))
    }
  }
}
