/// Why provisioning stopped: one sentence naming the step, what happened and the fix. Nothing is
/// paired after one.
public struct ProvisioningError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The steps, in the order they run.
  public enum Step: String, Sendable, CustomStringConvertible {
    case connecting = "connecting"
    case readingLockState = "reading the lock state"
    case unlocking = "unlocking"
    case readingCapabilities = "reading the capabilities"
    case choosingSlot = "choosing a slot"
    case registering = "writing the EID registration"
    case readingPublicKey = "reading the beacon's public key"
    case derivingKey = "deriving the identity key"
    case readingBack = "reading back the slot data"
    case relocking = "relocking"
    case pairing = "pairing"
    public var description: String { rawValue }
  }

  public let step: Step
  public let problem: String
  public let fix: String

  public init(_ step: Step, _ problem: String, fix: String) {
    self.step = step
    self.problem = problem
    self.fix = fix
  }

  public var description: String { "\(step): \(problem); \(fix)" }
}
