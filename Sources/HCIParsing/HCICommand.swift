/// An HCI command: opcode (OGF << 10 | OCF) and parameters, encoded as the H4 packet a raw HCI
/// socket takes. Layouts from the Core Specification, Vol 4, Part E, 7.
public struct HCICommand: Hashable, Sendable {
  public var opcode: UInt16
  public var parameters: [UInt8]

  public init(opcode: UInt16, parameters: [UInt8] = []) {
    self.opcode = opcode
    self.parameters = parameters
  }

  /// The bytes written to a raw HCI socket: the H4 command indicator, the opcode (little-endian),
  /// the parameter length, the parameters.
  public var packet: [UInt8] {
    [H4PacketType.command, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters
  }

  /// Read Local Supported Commands (OGF 0x04, OCF 0x0002): 64 octets of supported-command bits.
  public static let readLocalSupportedCommands = HCICommand(opcode: 0x1002)
  /// LE Read Local Supported Features (OGF 0x08, OCF 0x0003).
  public static let leReadLocalSupportedFeatures = HCICommand(opcode: 0x2003)

  public static let leSetScanParametersOpcode: UInt16 = 0x200B
  public static let leSetScanEnableOpcode: UInt16 = 0x200C
  public static let leSetExtendedScanParametersOpcode: UInt16 = 0x2041
  public static let leSetExtendedScanEnableOpcode: UInt16 = 0x2042

  /// LE Set Scan Parameters (7.8.10).
  public static func leSetScanParameters(_ p: ScanParameters) -> HCICommand {
    var bytes: [UInt8] = [p.active ? 0x01 : 0x00]
    bytes.appendLittleEndian(p.interval)
    bytes.appendLittleEndian(p.window)
    bytes += [p.ownAddressType, p.filterPolicy]
    return HCICommand(opcode: leSetScanParametersOpcode, parameters: bytes)
  }

  /// LE Set Scan Enable (7.8.11).
  public static func leSetScanEnable(_ enable: Bool, filterDuplicates: Bool) -> HCICommand {
    HCICommand(opcode: leSetScanEnableOpcode, parameters: [enable ? 1 : 0, filterDuplicates ? 1 : 0])
  }

  /// LE Set Extended Scan Parameters (7.8.64), scanning on the LE 1M PHY (and LE Coded when
  /// asked), with the same type, interval and window on each.
  public static func leSetExtendedScanParameters(_ p: ScanParameters) -> HCICommand {
    let phys: UInt8 = p.codedPHY ? 0x05 : 0x01
    var bytes: [UInt8] = [p.ownAddressType, p.filterPolicy, phys]
    for _ in 0..<(p.codedPHY ? 2 : 1) {
      bytes.append(p.active ? 0x01 : 0x00)
      bytes.appendLittleEndian(p.interval)
      bytes.appendLittleEndian(p.window)
    }
    return HCICommand(opcode: leSetExtendedScanParametersOpcode, parameters: bytes)
  }

  /// LE Set Extended Scan Enable (7.8.65), with no duration or period: scan until disabled.
  public static func leSetExtendedScanEnable(_ enable: Bool, filterDuplicates: Bool) -> HCICommand {
    HCICommand(
      opcode: leSetExtendedScanEnableOpcode,
      parameters: [enable ? 1 : 0, filterDuplicates ? 1 : 0, 0, 0, 0, 0])
  }
}

/// LE scan settings shared by the legacy and extended commands.
public struct ScanParameters: Hashable, Sendable {
  /// Active scanning sends scan requests (and gets scan responses); passive only listens.
  public var active: Bool
  /// In units of 0.625 ms, 0x0004…0x4000 (legacy) or 0x0004…0xFFFF (extended).
  public var interval: UInt16
  /// In units of 0.625 ms, ≤ interval.
  public var window: UInt16
  /// 0x00 public, 0x01 random.
  public var ownAddressType: UInt8
  /// 0x00: accept all advertisements (no filter accept list).
  public var filterPolicy: UInt8
  /// Also scan on the LE Coded PHY (extended commands only).
  public var codedPHY: Bool

  /// The kernel's defaults for passive LE scanning: interval 0x0060 and window 0x0030 (60 ms
  /// and 30 ms; Linux `hdev->le_scan_interval`/`le_scan_window`).
  public init(
    active: Bool = false, interval: UInt16 = 0x0060, window: UInt16 = 0x0030, ownAddressType: UInt8 = 0x00,
    filterPolicy: UInt8 = 0x00, codedPHY: Bool = false
  ) {
    self.active = active
    self.interval = interval
    self.window = window
    self.ownAddressType = ownAddressType
    self.filterPolicy = filterPolicy
    self.codedPHY = codedPHY
  }

  /// From milliseconds, rounded to 0.625 ms slots. Nil when out of the legacy range or the
  /// window exceeds the interval.
  public init?(active: Bool, intervalMilliseconds: Double, windowMilliseconds: Double) {
    let interval = (intervalMilliseconds / 0.625).rounded()
    let window = (windowMilliseconds / 0.625).rounded()
    guard interval.isFinite, window.isFinite, (4...0x4000).contains(interval), (4...0x4000).contains(window),
      window <= interval
    else { return nil }
    self.init(active: active, interval: UInt16(interval), window: UInt16(window))
  }

  /// Whether the values are in the range the legacy command accepts.
  public var problems: [String] {
    var out: [String] = []
    if !(0x0004...0x4000).contains(interval) { out.append("scan interval must be 2.5 ms … 10.24 s") }
    if !(0x0004...0x4000).contains(window) { out.append("scan window must be 2.5 ms … 10.24 s") }
    if window > interval { out.append("scan window must not exceed the scan interval") }
    return out
  }
}

/// What a controller supports, from Read Local Supported Commands.
public struct SupportedCommands: Hashable, Sendable {
  /// The 64 octets of the Supported_Commands bit mask.
  public var octets: [UInt8]

  public init(octets: [UInt8]) { self.octets = octets }

  /// Decodes a Read Local Supported Commands return: status, then 64 octets.
  public init(returnParameters: [UInt8]) throws(HCIEventError) {
    guard returnParameters.count >= 65 else {
      throw HCIEventError(
        .truncatedParameters, "Read Local Supported Commands returned \(returnParameters.count) bytes, not 65"
      )
    }
    octets = Array(returnParameters[1..<65])
  }

  public func supports(octet: Int, bit: Int) -> Bool {
    octet < octets.count && octets[octet] & (1 << bit) != 0
  }

  /// Octet 37 bits 5 and 6: LE Set Extended Scan Parameters and Enable. The kernel uses the
  /// extended commands exactly when both are set (`use_ext_scan` in hci_core.h).
  public var extendedScanning: Bool { supports(octet: 37, bit: 5) && supports(octet: 37, bit: 6) }
}

/// HCI error codes a scanner meets (Core Specification Vol 1, Part F).
public enum HCIStatus {
  public static let success: UInt8 = 0x00
  public static let unknownCommand: UInt8 = 0x01
  /// The controller refuses the command in its current state: LE Set Scan Parameters while
  /// scanning is enabled (bluetoothd's discovery), for one.
  public static let commandDisallowed: UInt8 = 0x0C
  public static let invalidParameters: UInt8 = 0x12

  public static func describe(_ status: UInt8) -> String {
    switch status {
    case success: return "success"
    case unknownCommand: return "Unknown HCI Command (0x01)"
    case commandDisallowed: return "Command Disallowed (0x0C)"
    case invalidParameters: return "Invalid HCI Command Parameters (0x12)"
    default: return "HCI status 0x\(hex(status))"
    }
  }
}

extension [UInt8] {
  mutating func appendLittleEndian(_ value: UInt16) {
    append(UInt8(value & 0xFF))
    append(UInt8(value >> 8))
  }
}
