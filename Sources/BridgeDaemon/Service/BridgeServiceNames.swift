import DBus

/// The daemon's D-Bus API (docs/dbus-api.md): `org.beaconbridge` on the system bus, object
/// `/org/beaconbridge`, interface `org.beaconbridge.Bridge1`. Structured results are JSON text,
/// so that shell tools and the CLI read them alike.
public enum BridgeServiceNames {
  public static let busName: BusName = "org.beaconbridge"
  public static let path: ObjectPath = "/org/beaconbridge"
  public static let interface: InterfaceName = "org.beaconbridge.Bridge1"
  public static let errorPrefix = "org.beaconbridge.Error."

  /// The methods of Bridge1, named once for the service and the CLI (docs/dbus-api.md).
  public enum Method {
    public static let status: MemberName = "Status"
    public static let pairings: MemberName = "Pairings"
    public static let recentLogs: MemberName = "RecentLogs"
    public static let pair: MemberName = "Pair"
    public static let unpair: MemberName = "Unpair"
    /// Takes a key: root only (dbus/org.beaconbridge.conf).
    public static let pairWithKey: MemberName = "PairWithKey"
    public static let tripStart: MemberName = "TripStart"
    public static let tripEvents: MemberName = "TripEvents"
    public static let tripEnd: MemberName = "TripEnd"
    public static let tripRetry: MemberName = "TripRetry"
    public static let tripAssign: MemberName = "TripAssign"
    public static let gzoneRefresh: MemberName = "GZoneRefresh"
    /// Every method, as the introspection data lists them.
    public static let all = [
      status, pairings, recentLogs, pair, unpair, pairWithKey, tripStart, tripEvents, tripEnd, tripRetry,
      tripAssign,
      gzoneRefresh,
    ]
  }

  /// The signals of Bridge1.
  public enum SignalName {
    public static let activeBeaconChanged: MemberName = "ActiveBeaconChanged"
    public static let tripTagged: MemberName = "TripTagged"
    public static let gzoneEvent: MemberName = "GZoneEvent"
    /// A paired beacon crossed a health threshold: `(s deviceId, s change, s json)`.
    public static let beaconHealth: MemberName = "BeaconHealth"
  }
}
