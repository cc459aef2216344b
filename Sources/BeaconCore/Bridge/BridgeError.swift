/// Why the bridge refused a call.
public struct BridgeError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: String, Hashable, Sendable {
    /// Trip calls before `start()` armed the bridge.
    case notArmed
    /// The host's configuration has problems; `description` lists them.
    case invalidConfiguration
    /// A trip call the trip's state does not allow.
    case trip
    /// The journal could not record a batch or a trip (full, or its storage failed): the call
    /// was refused and nothing of it was taken.
    case refused
    /// The journal could not be read at start.
    case journal
  }

  public var code: Code
  public var description: String

  public init(_ code: Code, _ description: String) {
    self.code = code
    self.description = description
  }
}
