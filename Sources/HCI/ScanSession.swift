import HCIParsing

/// How the HCI backend scans.
public struct HCIScanConfiguration: Hashable, Sendable {
  public enum CommandSet: String, Hashable, Sendable {
    /// Extended scan commands when the controller supports both (as the kernel decides), else legacy.
    case automatic
    case legacy
    case extended
  }

  /// The adapter index: 0 for hci0.
  public var adapter: UInt16
  public var parameters: ScanParameters
  public var commandSet: CommandSet
  /// When the controller is already scanning (bluetoothd's discovery): false reports the adapter
  /// busy; true listens to the running scan and leaves it as it was.
  public var joinRunningScan: Bool
  /// How long to let events queue between reads; 0 reads as soon as one arrives. Fewer
  /// wake-ups at high advertisement rates (docs/DESIGN.md, Behaviour).
  public var batchMilliseconds: Int
  /// How long to wait for a Command Complete.
  public var commandTimeoutMilliseconds: Int32

  public init(
    adapter: UInt16 = 0, parameters: ScanParameters = ScanParameters(), commandSet: CommandSet = .automatic,
    joinRunningScan: Bool = false, batchMilliseconds: Int = 100, commandTimeoutMilliseconds: Int32 = 2000
  ) {
    self.adapter = adapter
    self.parameters = parameters
    self.commandSet = commandSet
    self.joinRunningScan = joinRunningScan
    self.batchMilliseconds = batchMilliseconds
    self.commandTimeoutMilliseconds = commandTimeoutMilliseconds
  }
}

/// Sets a controller up for scanning and puts it back, over any `HCITransport`.
///
/// There is no HCI command that reads whether LE scanning is on, so the session infers it: LE
/// Set Scan Parameters is refused with Command Disallowed while scanning is enabled (Core
/// Specification Vol 4, Part E, 7.8.10 and 7.8.64). Success therefore means scanning was off,
/// and `stop()` turns it off again; Command Disallowed means someone else scans, and the session
/// either reports the adapter busy or (with `joinRunningScan`) listens without touching it.
public final class ScanSession {
  public let transport: any HCITransport
  public let configuration: HCIScanConfiguration
  /// Whether the extended commands are in use (decided in `start()`).
  public private(set) var usesExtendedCommands = false
  /// Whether this session enabled scanning, and so must disable it.
  public private(set) var enabledScanning = false
  /// Events that arrived while waiting for a command's completion; `drainPending()` hands them on.
  private var pending: [[UInt8]] = []

  public init(transport: any HCITransport, configuration: HCIScanConfiguration) {
    self.transport = transport
    self.configuration = configuration
  }

  /// Sends a command and waits for its Command Complete (returning the return parameters after
  /// the status) or Command Status. Other events are kept for the scan.
  @discardableResult
  func execute(_ command: HCICommand, name: String) throws(HCIScanError) -> [UInt8] {
    try transport.send(command.packet)
    var waited: Int32 = 0
    let step: Int32 = 100
    while waited < configuration.commandTimeoutMilliseconds {
      let events = try transport.receive(timeoutMilliseconds: step)
      if events.isEmpty { waited += step }
      for (i, packet) in events.enumerated() {
        let answer: (status: UInt8, rest: [UInt8])?
        switch try? HCIEvent.parse(packet) {
        case .commandComplete(let opcode, let parameters) where opcode == command.opcode:
          answer = (parameters.first ?? 0xFF, Array(parameters.dropFirst()))
        case .commandStatus(let status, let opcode) where opcode == command.opcode:
          answer = (status, [])
        default:
          answer = nil
        }
        guard let answer else {
          pending.append(packet)
          continue
        }
        pending += events[(i + 1)...]
        guard answer.status == HCIStatus.success else {
          throw HCIScanError.from(
            status: answer.status, opcode: command.opcode, command: name, adapter: transport.adapterName)
        }
        return answer.rest
      }
    }
    throw HCIScanError(
      .timeout,
      "\(transport.adapterName) did not answer \(name) within \(configuration.commandTimeoutMilliseconds) ms")
  }

  /// Chooses the command set, sets the parameters and enables scanning with duplicate filtering
  /// off (every advertisement is reported, docs/DESIGN.md, Behaviour).
  public func start() throws(HCIScanError) {
    let problems = configuration.parameters.problems
    guard problems.isEmpty else {
      throw HCIScanError(.commandFailed, "invalid scan parameters: " + problems.joined(separator: "; "))
    }
    switch configuration.commandSet {
    case .legacy: usesExtendedCommands = false
    case .extended: usesExtendedCommands = true
    case .automatic:
      let octets = try execute(.readLocalSupportedCommands, name: "Read Local Supported Commands")
      usesExtendedCommands = SupportedCommands(octets: octets).extendedScanning
    }
    let parameters: HCICommand =
      usesExtendedCommands
      ? .leSetExtendedScanParameters(configuration.parameters)
      : .leSetScanParameters(configuration.parameters)
    do {
      try execute(
        parameters, name: usesExtendedCommands ? "LE Set Extended Scan Parameters" : "LE Set Scan Parameters")
    } catch let error where error.kind == .adapterBusy && configuration.joinRunningScan {
      // Someone else scans: listen to their scan and leave the controller as it is.
      return
    }
    let enable: HCICommand =
      usesExtendedCommands
      ? .leSetExtendedScanEnable(true, filterDuplicates: false)
      : .leSetScanEnable(true, filterDuplicates: false)
    try execute(enable, name: usesExtendedCommands ? "LE Set Extended Scan Enable" : "LE Set Scan Enable")
    enabledScanning = true
  }

  /// Restores the previous state: disables scanning if this session enabled it. Best effort: an
  /// adapter that went away meanwhile is not an error here.
  public func stop() {
    guard enabledScanning else { return }
    enabledScanning = false
    let disable: HCICommand =
      usesExtendedCommands
      ? .leSetExtendedScanEnable(false, filterDuplicates: false)
      : .leSetScanEnable(false, filterDuplicates: false)
    _ = try? execute(disable, name: "disable scanning")
  }

  /// Events that arrived during command exchanges.
  public func drainPending() -> [[UInt8]] {
    defer { pending = [] }
    return pending
  }
}
