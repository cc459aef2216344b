import BeaconCore

/// Why a `Status` reply did not read as a `StatusDocument`: a key this program needs is absent,
/// or holds another type. Said as a sentence, since it means the daemon runs another version
/// than the command asking it.
public struct StatusDocumentError: Error, Sendable, Equatable, CustomStringConvertible {
  public typealias Problem = FieldError.Problem

  /// Where in the document, as `pairedBeacons[0].silent`.
  public var path: String
  public var problem: Problem

  public init(path: String, problem: Problem) {
    self.path = path
    self.problem = problem
  }

  public init(_ error: FieldError) { self.init(path: error.path, problem: error.problem) }

  /// What is wrong, after "the daemon's status": `has no "upload"`.
  public var problemText: String {
    switch problem {
    case .missing: "has no \"\(path)\""
    case .wrongType(let expected, let found): "has \(found) for \"\(path)\", where \(expected) belongs"
    case .unknownValue(let value):
      "has \(value.quotedForMessage) for \"\(path)\", a value this beaconbridge does not know"
    }
  }

  public var description: String {
    "the daemon's status \(problemText): the running daemon is another version than this beaconbridge (restart it after an upgrade: systemctl restart beaconbridge)"
  }

  /// What fixes it, for `doctor`.
  public static let fix =
    "restart the daemon so that it runs the installed version: systemctl restart beaconbridge"
}
