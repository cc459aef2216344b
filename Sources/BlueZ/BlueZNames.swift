import DBus

/// Every BlueZ name this module uses, in one place (as bleak's `defs.py`).
/// Source: BlueZ 5.66 doc/adapter-api.txt, doc/device-api.txt, doc/advertisement-monitor-api.txt.
///
/// A name the in-place readers compare bytes with is spelled once in `Spelling` (a literal in
/// the binary); its `String` form below and its `WireName` in `Wire` are both made from it.
public enum BlueZ {
  /// The names the in-place readers (`DevicePropertyReader`, `DeviceDecoder`, `ManagedObjects`)
  /// compare with.
  enum Spelling {
    static var deviceInterface: StaticString { "org.bluez.Device1" }
    static var propertiesInterface: StaticString { "org.freedesktop.DBus.Properties" }
    static var propertiesChanged: StaticString { "PropertiesChanged" }
    static var address: StaticString { "Address" }
    static var rssi: StaticString { "RSSI" }
    static var txPower: StaticString { "TxPower" }
    static var manufacturerData: StaticString { "ManufacturerData" }
    static var serviceData: StaticString { "ServiceData" }
    static var name: StaticString { "Name" }
    static var paired: StaticString { "Paired" }
    static var trusted: StaticString { "Trusted" }
    static var connected: StaticString { "Connected" }
    /// An adapter's object path up to its `N` (`/org/bluez/hciN`), which device paths extend.
    static var adapterPathPrefix: StaticString { "/org/bluez/hci" }
  }

  /// `Spelling`'s names as bytes to compare in place (a `String` comparison cost about 100
  /// instructions a name, a dozen names per signal), and the signatures the readers expect.
  enum Wire {
    static var deviceInterface: WireName { WireName(Spelling.deviceInterface) }
    static var propertiesInterface: WireName { WireName(Spelling.propertiesInterface) }
    static var propertiesChanged: WireName { WireName(Spelling.propertiesChanged) }
    static var address: WireName { WireName(Spelling.address) }
    static var rssi: WireName { WireName(Spelling.rssi) }
    static var txPower: WireName { WireName(Spelling.txPower) }
    static var manufacturerData: WireName { WireName(Spelling.manufacturerData) }
    static var serviceData: WireName { WireName(Spelling.serviceData) }
    static var name: WireName { WireName(Spelling.name) }
    static var paired: WireName { WireName(Spelling.paired) }
    static var trusted: WireName { WireName(Spelling.trusted) }
    static var connected: WireName { WireName(Spelling.connected) }
    /// PropertiesChanged's body, with and without its invalidated properties.
    static var withInvalidated: WireName { WireName("sa{sv}as") }
    static var withoutInvalidated: WireName { WireName("sa{sv}") }
    /// RSSI and TxPower.
    static var int16: WireName { WireName("n") }
    /// ManufacturerData: company to a variant holding `ay`.
    static var companies: WireName { WireName("a{qv}") }
    static var bytes: WireName { WireName("ay") }
    /// GetManagedObjects' reply.
    static var managedObjects: WireName { WireName("a{oa{sa{sv}}}") }
  }

  public static let service: BusName = "org.bluez"
  /// BlueZ's ObjectManager lives at `/`; adapters are `/org/bluez/hciN`.
  public static let objectManagerPath: ObjectPath = "/"
  public static let root: ObjectPath = "/org/bluez"
  /// A device's path element under its adapter: `dev_` then its address, `_` for `:`.
  public static let devicePathPrefix = "dev_"

  public static let adapterInterface: InterfaceName = "org.bluez.Adapter1"
  public static let deviceInterface = InterfaceName("\(Spelling.deviceInterface)")
  public static let advertisementMonitorManagerInterface: InterfaceName =
    "org.bluez.AdvertisementMonitorManager1"
  /// The interface our monitor object implements (BlueZ calls it).
  public static let advertisementMonitorInterface: InterfaceName = "org.bluez.AdvertisementMonitor1"

  /// Adapter1 and ObjectManager methods.
  public enum Method {
    public static let setDiscoveryFilter: MemberName = "SetDiscoveryFilter"
    public static let startDiscovery: MemberName = "StartDiscovery"
    public static let stopDiscovery: MemberName = "StopDiscovery"
    public static let removeDevice: MemberName = "RemoveDevice"
    public static let getManagedObjects: MemberName = "GetManagedObjects"
    /// AdvertisementMonitorManager1 methods.
    public static let registerMonitor: MemberName = "RegisterMonitor"
    public static let unregisterMonitor: MemberName = "UnregisterMonitor"
    /// AdvertisementMonitor1 methods, which BlueZ calls on our monitor.
    public static let activate: MemberName = "Activate"
    public static let release: MemberName = "Release"
    public static let deviceFound: MemberName = "DeviceFound"
    public static let deviceLost: MemberName = "DeviceLost"
    /// Properties.Get: one property as BlueZ has it, not as the mirror last saw it.
    public static let get: MemberName = "Get"
  }

  /// ObjectManager and Properties signals.
  public enum SignalName {
    public static let interfacesAdded: MemberName = "InterfacesAdded"
    public static let interfacesRemoved: MemberName = "InterfacesRemoved"
    public static let propertiesChanged = MemberName("\(Spelling.propertiesChanged)")
    public static let nameOwnerChanged: MemberName = "NameOwnerChanged"
  }

  /// Adapter1 and Device1 property names.
  public enum Property {
    public static let powered = "Powered"
    public static let paired = "\(Spelling.paired)"
    public static let trusted = "\(Spelling.trusted)"
    public static let connected = "\(Spelling.connected)"
    public static let discovering = "Discovering"
    public static let address = "\(Spelling.address)"
    public static let adapter = "Adapter"
    public static let name = "\(Spelling.name)"
    public static let rssi = "\(Spelling.rssi)"
    public static let txPower = "\(Spelling.txPower)"
    public static let manufacturerData = "\(Spelling.manufacturerData)"
    public static let serviceData = "\(Spelling.serviceData)"
    /// AdvertisementMonitorManager1: the monitor types the adapter offers (`or_patterns`).
    public static let supportedMonitorTypes = "SupportedMonitorTypes"
    /// AdvertisementMonitor1: the monitor's type and its patterns (`a(yyay)`).
    public static let monitorType = "Type"
    public static let patterns = "Patterns"
  }

  /// The one monitor type this module registers (AdvertisementMonitor1.Type).
  public static let orPatterns = "or_patterns"

  /// SetDiscoveryFilter's keys and the transport value this module asks for.
  public enum DiscoveryFilter {
    public static let transport = "Transport"
    public static let lowEnergy = "le"
    public static let duplicateData = "DuplicateData"
  }

  /// BlueZ's D-Bus error names (doc/adapter-api.txt, "Possible errors"). Any other
  /// `org.bluez.Error.*` keeps its own name.
  public enum ErrorReply {
    public static let prefix = "org.bluez.Error."
    public static let notReady = prefix + "NotReady"
    public static let inProgress = prefix + "InProgress"
    public static let invalidArguments = prefix + "InvalidArguments"
    public static let notSupported = prefix + "NotSupported"
    public static let notAuthorized = prefix + "NotAuthorized"
    public static let failed = prefix + "Failed"
    public static let doesNotExist = prefix + "DoesNotExist"
  }
}
