/// How the integration names a key pairing (the store's row, say): a plain number, so the
/// resolvers are not generic and run specialized from any module.
public struct KeyPairingID: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByIntegerLiteral
{
  public let rawValue: Int64
  public init(rawValue: Int64) { self.rawValue = rawValue }
  public init(_ value: Int) { rawValue = Int64(value) }
  public init(integerLiteral value: Int64) { rawValue = value }
  public var description: String { String(rawValue) }
}
