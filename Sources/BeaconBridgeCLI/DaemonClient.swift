import BeaconCore
import BridgeDaemon
import DBus
import Foundation

/// Talks to the running daemon over its D-Bus API (docs/dbus-api.md).
struct DaemonClient {
  struct Failure: Error, CustomStringConvertible {
    var description: String
    /// No daemon (or no bus) to ask: callers that can work without it do so.
    var notRunning = false
  }

  /// Calls a Bridge1 method; errors come back as one sentence for stderr.
  static func call(_ member: MemberName, _ arguments: [DBusValue] = []) async throws(Failure) -> [DBusValue] {
    let connection: Connection
    do { connection = try Connection(.system) } catch {
      throw Failure(
        description: "cannot reach the system bus (\(error.message)); is dbus running?", notRunning: true)
    }
    defer { connection.close() }
    do {
      return try await connection.call(
        destination: BridgeServiceNames.busName, path: BridgeServiceNames.path,
        interface: BridgeServiceNames.interface,
        member: member, arguments, timeout: .seconds(30))
    } catch let error as DBusError {
      switch error.name {
      case .serviceUnknown, .nameHasNoOwner:
        throw Failure(
          description:
            "the beaconbridge daemon is not running (no \(BridgeServiceNames.busName) on the system bus); start it with 'systemctl start beaconbridge'",
          notRunning: true)
      case .accessDenied:
        // The policy (dbus/org.beaconbridge.conf) lets group beaconbridge call Bridge1, but only
        // root PairWithKey, which carries a key.
        let who =
          member == BridgeServiceNames.Method.pairWithKey
          ? "run it as root (sudo): only root may pair by key"
          : "run as root or as a member of the beaconbridge group"
        throw Failure(description: "access denied (\(error.message)); \(who)")
      default:
        throw Failure(description: error.message.isEmpty ? error.name.rawValue : error.message)
      }
    } catch {
      throw Failure(description: "\(error)")
    }
  }

  static func json(_ member: MemberName, _ arguments: [DBusValue] = []) async throws(Failure) -> JSONValue {
    let reply = try await call(member, arguments)
    guard let text = reply.first?.string, let json = try? JSONValue.parse(Data(text.utf8)) else {
      throw Failure(description: "the daemon's \(member) reply was not JSON")
    }
    return json
  }

  /// The daemon's `Status` reply as it came, and read as the contract (`StatusDocument`): a reply
  /// that does not read is its sentence, naming the key.
  static func status() async throws(Failure) -> (
    reply: JSONValue, document: Result<StatusDocument, StatusDocumentError>
  ) {
    let reply = try await json(BridgeServiceNames.Method.status)
    do { return (reply, .success(try StatusDocument(json: reply))) } catch { return (reply, .failure(error)) }
  }
}
