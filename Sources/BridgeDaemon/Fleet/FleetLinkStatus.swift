import Synchronization

/// The fleet link's shared state: written by `FleetLink`, read by the D-Bus `Status`.
final class FleetLinkStatus: Sendable {
  private let state: Mutex<FleetLinkState>
  init(_ initial: FleetLinkState) { state = Mutex(initial) }
  var current: FleetLinkState { state.withLock { $0 } }
  func update(_ change: (inout FleetLinkState) -> Void) { state.withLock { change(&$0) } }
}
