/// Why a G-Zone load failed: which payload (a file path or a URL) and what was wrong with it.
///
/// A load fails as a whole: one bad payload means no load, so a consumer never diffs against a
/// half-loaded state.
public struct GZoneError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: String, Hashable, Sendable {
    /// The file or URL could not be read or fetched.
    case unreadable
    /// Not JSON at all.
    case invalidJSON
    /// JSON, but not the shape the payload has (an object where an array belongs, a level
    /// without a point range, …).
    case wrongShape
  }

  public var code: Code
  /// The file path or URL of the payload.
  public var origin: String
  public var message: String

  public init(_ code: Code, origin: String, _ message: String) {
    self.code = code
    self.origin = origin
    self.message = message
  }

  public var description: String { "\(origin): \(message)" }
}
