import BlueZ
import DBus
import HCI

/// Why a scan cannot run, in words a technician can act on. One place for the command line
/// (`scan`, `pair --nearest`) and the service (its journal, `STATUS=` and `doctor`): only the fix
/// differs, because the service runs under systemd with the unit's sandbox.
public enum ScanAdvice {
  public enum Audience: Sendable {
    case commandLine
    case service
  }

  /// The unit drop-in that grants the raw HCI backend its capabilities (systemd/beaconbridge-hci.conf).
  public static let hciDropInFix =
    "install the HCI drop-in: mkdir -p /etc/systemd/system/beaconbridge.service.d && cp /usr/share/beaconbridge/beaconbridge-hci.conf /etc/systemd/system/beaconbridge.service.d/ && systemctl daemon-reload && systemctl restart beaconbridge"

  public static func explain(_ error: any Error, for audience: Audience = .commandLine) -> String {
    if let error = error as? BlueZError {
      switch error.code {
      case .bluezUnavailable:
        return
          "bluetoothd is not running (no org.bluez on the system bus). Start it with 'systemctl start bluetooth', or scan without it: "
          + (audience == .service ? "[General] backend = hci with the HCI drop-in" : "--backend hci")
      case .noAdapter:
        return "no Bluetooth adapter found. Plug one in, or check 'btmgmt info' and 'rfkill list'"
      case .adapterNotFound:
        return "\(error.message). List the adapters with 'btmgmt info'"
      default:
        return "bluez: \(error)"
      }
    }
    if let error = error as? DBusError {
      if error.name.rawValue.contains("AccessDenied") { return accessDenied(error.message, audience) }
      return "cannot reach the system bus (\(error.name.rawValue): \(error.message)). Is dbus running?"
    }
    if let error = error as? HCIScanError, error.kind == .permissionDenied, audience == .service {
      // The library's own advice names setcap and AmbientCapabilities; under systemd the fix
      // that keeps the unit's hardening is the shipped drop-in.
      let what =
        error.description.split(separator: ".", maxSplits: 1).first.map(String.init) ?? "permission denied"
      return
        "\(what): the raw HCI backend needs CAP_NET_RAW and CAP_NET_ADMIN, which the unit does not grant; \(hciDropInFix)"
    }
    return String(describing: error)
  }

  private static func accessDenied(_ message: String, _ audience: Audience) -> String {
    switch audience {
    case .commandLine:
      "access denied by the D-Bus policy (\(message)). Run as root or as a member of the bluetooth group"
    case .service:
      "access denied by the D-Bus policy (\(message)). The unit runs with SupplementaryGroups=bluetooth; check that group 'bluetooth' exists and that BlueZ's policy (/usr/share/dbus-1/system.d/bluetooth.conf) is installed"
    }
  }
}
