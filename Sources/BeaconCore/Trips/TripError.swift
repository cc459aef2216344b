/// Why a trip call (start, a batch, end, assign) was refused: a code, and a sentence for people.
public struct TripError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: String, Hashable, Sendable {
    case unknownTrip
    case alreadyStarted
    case alreadyEnded
    case alreadyResolved
    /// `[Trips] maxOpenTrips` trips are open already.
    case tooManyOpenTrips
  }

  public var code: Code
  public var description: String

  public init(_ code: Code, _ description: String) {
    self.code = code
    self.description = description
  }
}
