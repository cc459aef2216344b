import HCIParsing

/// Why the HCI backend could not scan, with what to do about it.
public struct HCIScanError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Kind: String, Hashable, Sendable {
    /// The kernel has no Bluetooth support (socket(AF_BLUETOOTH) fails with EAFNOSUPPORT).
    case bluetoothUnavailable
    /// Missing CAP_NET_RAW / CAP_NET_ADMIN (EPERM or EACCES).
    case permissionDenied
    /// No such adapter (ENODEV).
    case adapterNotFound
    /// The adapter is down: not HCI_UP, or ENETDOWN on a command.
    case adapterDown
    /// The controller is already scanning (Command Disallowed, 0x0C): bluetoothd's discovery, or
    /// another scanner. Or the adapter is held exclusively by a user channel (EBUSY).
    case adapterBusy
    /// The controller answered a command with an error status.
    case commandFailed
    /// No Command Complete or Command Status within the timeout.
    case timeout
    /// Another system call failure.
    case system
  }

  public var kind: Kind
  public var description: String

  public init(_ kind: Kind, _ description: String) {
    self.kind = kind
    self.description = description
  }

  // errno values from Linux asm-generic/errno-base.h and errno.h, so the mapping is testable
  // without a C import.
  static let EPERM: Int32 = 1
  static let EACCES: Int32 = 13
  static let EBUSY: Int32 = 16
  static let ENODEV: Int32 = 19
  static let EAFNOSUPPORT: Int32 = 97
  static let EPROTONOSUPPORT: Int32 = 93
  static let ENETDOWN: Int32 = 100
  static let ETIMEDOUT: Int32 = 110

  /// Maps a failed system call's errno to the error a user can act on.
  public static func from(errno code: Int32, operation: String, adapter: String, message: String)
    -> HCIScanError
  {
    switch code {
    case EPERM, EACCES:
      return HCIScanError(
        .permissionDenied,
        "\(operation) on \(adapter): permission denied. Raw HCI needs CAP_NET_RAW and CAP_NET_ADMIN: run as root, or grant them (systemd AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN, or setcap cap_net_raw,cap_net_admin+eip on the binary)."
      )
    case EAFNOSUPPORT, EPROTONOSUPPORT:
      return HCIScanError(
        .bluetoothUnavailable,
        "\(operation): this kernel has no Bluetooth support (AF_BLUETOOTH: \(message)). Load the bluetooth module, or use a kernel built with it."
      )
    case ENODEV:
      return HCIScanError(
        .adapterNotFound,
        "\(adapter) does not exist (\(message)). List adapters with 'hciconfig' or 'btmgmt info'.")
    case ENETDOWN:
      return HCIScanError(.adapterDown, adapterDownAdvice(adapter))
    case EBUSY:
      return HCIScanError(
        .adapterBusy,
        "\(operation) on \(adapter): the adapter is busy (\(message)); another program holds it exclusively (an HCI user channel)."
      )
    case ETIMEDOUT:
      return HCIScanError(.timeout, "\(operation) on \(adapter): the controller did not answer")
    default:
      return HCIScanError(.system, "\(operation) on \(adapter): \(message) (errno \(code))")
    }
  }

  static func adapterDownAdvice(_ adapter: String) -> String {
    "\(adapter) is down. Power it on: 'btmgmt --index \(adapter.dropFirst(3)) power on' (or 'hciconfig \(adapter) up'), and check 'rfkill list'."
  }

  /// Maps a command's non-zero status.
  public static func from(status: UInt8, opcode: UInt16, command: String, adapter: String) -> HCIScanError {
    if status == HCIStatus.commandDisallowed {
      return HCIScanError(
        .adapterBusy,
        "\(adapter) refused \(command) with \(HCIStatus.describe(status)): the controller is already scanning, most likely for bluetoothd's discovery. Stop it ('bluetoothctl scan off', or stop the program that scans), use '--backend bluez', or let the HCI backend join the running scan."
      )
    }
    return HCIScanError(
      .commandFailed,
      "\(adapter) refused \(command) (opcode 0x\(String(opcode, radix: 16, uppercase: true))) with \(HCIStatus.describe(status))"
    )
  }
}
