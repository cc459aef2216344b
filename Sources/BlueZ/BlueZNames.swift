import DBus

/// Every BlueZ name this module uses, in one place (as bleak's `defs.py`).
/// Source: BlueZ 5.66 doc/adapter-api.txt, doc/device-api.txt, doc/advertisement-monitor-api.txt.
public enum BlueZ {
  public static let service: BusName = "org.bluez"
  /// BlueZ's ObjectManager lives at `/`; adapters are `/org/bluez/hciN`.
  public static let objectManagerPath: ObjectPath = "/"
  public static let root: ObjectPath = "/org/bluez"

  public static let adapterInterface: InterfaceName = "org.bluez.Adapter1"
  public static let deviceInterface: InterfaceName = "org.bluez.Device1"
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
  }

  /// ObjectManager and Properties signals.
  public enum SignalName {
    public static let interfacesAdded: MemberName = "InterfacesAdded"
    public static let interfacesRemoved: MemberName = "InterfacesRemoved"
    public static let propertiesChanged: MemberName = "PropertiesChanged"
    public static let nameOwnerChanged: MemberName = "NameOwnerChanged"
  }

  /// Adapter1 and Device1 property names.
  public enum Property {
    public static let powered = "Powered"
    public static let paired = "Paired"
    public static let trusted = "Trusted"
    public static let connected = "Connected"
    public static let discovering = "Discovering"
    public static let address = "Address"
    public static let adapter = "Adapter"
    public static let name = "Name"
    public static let rssi = "RSSI"
    public static let txPower = "TxPower"
    public static let manufacturerData = "ManufacturerData"
    public static let serviceData = "ServiceData"
    /// AdvertisementMonitorManager1: the monitor types the adapter offers (`or_patterns`).
    public static let supportedMonitorTypes = "SupportedMonitorTypes"
    /// The Device1 properties whose change means "an advertisement was received".
    public static let advertisementKeys: Set<String> = [rssi, txPower, manufacturerData, serviceData]
  }
}
