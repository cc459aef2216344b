/// A Bluetooth adapter as the kernel and BlueZ name it: `hciN`, N from 0 to 9999 in decimal with
/// no leading zero (the kernel's `hdev->name` is 8 bytes: "hci", 4 digits and a NUL).
///
/// The one parser of adapter names: the configuration file, `scan`/`replay`/`pair --adapter`, and
/// BlueZ object paths (`/org/bluez/hci0/dev_…`).
public struct HCIDeviceID: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The kernel's device index, as `HCIScanConfiguration` and `hci_get_route` take it.
  public let index: UInt16

  public static let maxIndex: UInt16 = 9999
  static let rule = "an adapter is hci followed by a number from 0 to 9999 without leading zeros, like hci0"

  public init(index: UInt16) throws(IdentifierError) {
    guard index <= Self.maxIndex else {
      throw IdentifierError(field: "adapter", value: "hci\(index)", rule: "is out of range; \(Self.rule)")
    }
    self.index = index
  }

  public init(_ text: String) throws(IdentifierError) {
    guard let parsed = Self(utf8: text.utf8) else {
      throw IdentifierError(
        field: "adapter", value: text,
        rule: text.isEmpty ? "is empty; \(Self.rule)" : "is not valid; \(Self.rule)")
    }
    self = parsed
  }

  /// Parses the bytes of a name, nil unless it is exactly `hciN` by the rule above. Allocation-free
  /// and inlinable, for the BlueZ object paths of every signal.
  @inlinable
  public init?(utf8 name: some Collection<UInt8>) {
    // Three byte comparisons: `starts(with: "hci".utf8)` walked String.UTF8View's indices, about
    // 200 instructions per BlueZ signal (callgrind, make bench-check).
    guard name.count > 3, name.count <= 7 else { return nil }
    var bytes = name.makeIterator()
    guard bytes.next() == UInt8(ascii: "h"), bytes.next() == UInt8(ascii: "c"),
      bytes.next() == UInt8(ascii: "i")
    else { return nil }
    let digits = name.dropFirst(3)
    guard digits.first != UInt8(ascii: "0") || digits.count == 1 else { return nil }
    var number: UInt16 = 0
    for byte in digits {
      guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
      number = number * 10 + UInt16(byte - UInt8(ascii: "0"))
    }
    index = number
  }

  /// `hciN`.
  public var name: String { "hci\(index)" }
  public var description: String { name }
  public static func < (a: HCIDeviceID, b: HCIDeviceID) -> Bool { a.index < b.index }
}
