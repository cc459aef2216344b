/// One AD structure: length, type, data (Core Specification Vol 3, Part C, 11).
public struct ADStructure: Hashable, Sendable {
  public var type: UInt8
  public var data: [UInt8]

  public init(type: UInt8, data: [UInt8]) {
    self.type = type
    self.data = data
  }
}
