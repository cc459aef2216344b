import BeaconCore
import DBus

/// The application this source registers with AdvertisementMonitorManager1 for passive scanning:
/// an ObjectManager at `root` with one `or_patterns` monitor that matches iBeacon frames.
/// Source: BlueZ 5.66 doc/advertisement-monitor-api.txt.
enum AdvertisementMonitor {
  /// Our object paths (on our own connection, so a fixed name cannot clash with other clients).
  static let root: ObjectPath = "/org/beaconbridge/monitor"
  static let iBeacon: ObjectPath = "/org/beaconbridge/monitor/ibeacon"

  /// One `or_patterns` entry: at offset 0 of AD type 0xFF (manufacturer specific data), Apple's
  /// company ID little-endian, then iBeacon's type and length, as `BeaconFrameParser` reads them.
  static let iBeaconPattern: (start: UInt8, adType: UInt8, content: [UInt8]) = (
    0, 0xFF,
    [
      UInt8(truncatingIfNeeded: BeaconFrameParser.appleCompanyID),
      UInt8(truncatingIfNeeded: BeaconFrameParser.appleCompanyID >> 8), BeaconFrameParser.iBeaconType,
      BeaconFrameParser.iBeaconLength,
    ]
  )

  /// The reply to GetManagedObjects on `root` (`a{oa{sa{sv}}}`).
  static func managedObjects() -> DBusValue {
    let pattern = DBusValue.structure([
      .byte(iBeaconPattern.start), .byte(iBeaconPattern.adType), .bytes(iBeaconPattern.content),
    ])
    let properties = DBusValue.stringVariantDictionary([
      BlueZ.Property.monitorType: .string(BlueZ.orPatterns),
      BlueZ.Property.patterns: .array(element: "(yyay)", [pattern]),
    ])
    return .dictionary(
      key: "o", value: "a{sa{sv}}",
      [
        .init(
          .objectPath(iBeacon),
          .dictionary(
            key: "s", value: "a{sv}",
            [.init(.string(BlueZ.advertisementMonitorInterface.rawValue), properties)]))
      ])
  }

  /// What BlueZ told a monitor.
  enum Call: Sendable {
    case activated
    case released
    case deviceFound(ObjectPath)
    case deviceLost(ObjectPath)
  }

  /// Answers BlueZ's calls on our objects, passing the monitor's calls on.
  static func handler(_ forward: @escaping @Sendable (Call, BusName?) -> Void) -> MethodHandler {
    { call in
      switch (call.path, call.interface, call.member) {
      case (root, .objectManager?, BlueZ.Method.getManagedObjects):
        return .success([managedObjects()])
      case (iBeacon, BlueZ.advertisementMonitorInterface?, BlueZ.Method.activate):
        forward(.activated, call.sender)
        return .success([])
      case (iBeacon, BlueZ.advertisementMonitorInterface?, BlueZ.Method.release):
        forward(.released, call.sender)
        return .success([])
      case (iBeacon, BlueZ.advertisementMonitorInterface?, BlueZ.Method.deviceFound):
        guard let device = call.body.first?.objectPath else { return .failure(.unknownMethod(call)) }
        forward(.deviceFound(device), call.sender)
        return .success([])
      case (iBeacon, BlueZ.advertisementMonitorInterface?, BlueZ.Method.deviceLost):
        guard let device = call.body.first?.objectPath else { return .failure(.unknownMethod(call)) }
        forward(.deviceLost(device), call.sender)
        return .success([])
      default:
        return .failure(.unknownMethod(call))
      }
    }
  }
}
