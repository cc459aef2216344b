import HCIParsing
import Synchronization

@testable import HCI

/// A controller that answers commands from a script: every command gets a Command Complete
/// with the scripted status (success by default) and return parameters, and advertising events
/// can be queued to arrive.
final class ScriptedController: HCITransport, Sendable {
  struct State {
    var sent: [[UInt8]] = []
    var queued: [[UInt8]] = []
    var statuses: [UInt16: UInt8] = [:]
    var returns: [UInt16: [UInt8]] = [:]
    var silent: Set<UInt16> = []
    /// Events delivered right before a command's answer (to test they are kept).
    var before: [UInt16: [[UInt8]]] = [:]
  }

  let adapterName = "hci0"
  let state = Mutex(State())

  init(extendedScanning: Bool = false) {
    var octets = [UInt8](repeating: 0, count: 64)
    if extendedScanning { octets[37] = 0x60 }
    state.withLock { $0.returns[0x1002] = octets }
  }

  var sent: [[UInt8]] { state.withLock { $0.sent } }
  var sentOpcodes: [UInt16] { sent.map { UInt16($0[1]) | UInt16($0[2]) << 8 } }

  func answer(_ opcode: UInt16, status: UInt8) { state.withLock { $0.statuses[opcode] = status } }
  func ignore(_ opcode: UInt16) { state.withLock { _ = $0.silent.insert(opcode) } }
  func queue(_ event: [UInt8]) { state.withLock { $0.queued.append(event) } }
  func deliver(_ event: [UInt8], before opcode: UInt16) {
    state.withLock { $0.before[opcode, default: []].append(event) }
  }

  func send(_ packet: [UInt8]) throws(HCIScanError) {
    state.withLock { s in
      s.sent.append(packet)
      let opcode = UInt16(packet[1]) | UInt16(packet[2]) << 8
      guard !s.silent.contains(opcode) else { return }
      s.queued += s.before[opcode] ?? []
      let parameters = [s.statuses[opcode] ?? 0] + (s.returns[opcode] ?? [])
      s.queued.append([0x0E, UInt8(3 + parameters.count), 0x01, packet[1], packet[2]] + parameters)
    }
  }

  func receive(timeoutMilliseconds: Int32) throws(HCIScanError) -> [[UInt8]] {
    let events = state.withLock { s in
      defer { s.queued = [] }
      return s.queued
    }
    if events.isEmpty {
      // Behave like poll(): wait a little, not the whole timeout, to keep tests fast.
      var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
      nanosleep(&pause, nil)
    }
    return events
  }
}

#if canImport(Glibc)
  import Glibc
#endif
