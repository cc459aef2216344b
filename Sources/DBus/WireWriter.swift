/// Writes `DBusValue`s in the wire format (little-endian, aligned from the first byte), the
/// inverse of `WireReader.value`: a value the generic path built (libdbus's reader, a `Signal`)
/// can then be read by an in-place reader, so that a format read in place has that one reader
/// (BlueZ's Device1 properties). Not for sending: the bus's messages are libdbus's to write.
public struct WireWriter {
  public private(set) var bytes: [UInt8] = []

  public init() {}

  /// Writes `value` after what was written; false when it cannot be written (its parts disagree
  /// with the types it declares, or a signature is over 255 bytes), and then what was written is
  /// not one value.
  public mutating func write(_ value: DBusValue) -> Bool {
    switch value {
    case .byte(let v): bytes.append(v)
    case .bool(let v): put(UInt32(v ? 1 : 0))
    case .int16(let v): put(v)
    case .uint16(let v): put(v)
    case .int32(let v): put(v)
    case .uint32(let v): put(v)
    case .int64(let v): put(v)
    case .uint64(let v): put(v)
    case .double(let v): put(v.bitPattern)
    case .string(let text): string(text)
    case .objectPath(let path): string(path.rawValue)
    case .signature(let type): return signature(type.rawValue)
    case .unixFD(let index): put(UInt32(bitPattern: index))
    case .bytes(let data):
      put(UInt32(truncatingIfNeeded: data.count))
      bytes.append(contentsOf: data)
    case .array(let element, let items):
      let length = beginArray(element.rawValue)
      for item in items {
        guard item.signature == element, write(item) else { return false }
      }
      endArray(length)
    case .dictionary(let key, let valueType, let entries):
      let length = beginArray("{")
      for entry in entries {
        pad(8)
        guard entry.key.signature == key, entry.value.signature == valueType, write(entry.key),
          write(entry.value)
        else { return false }
      }
      endArray(length)
    case .structure(let fields):
      pad(8)
      for field in fields {
        guard write(field) else { return false }
      }
    case .variant(let inner):
      guard signature(inner.signature.rawValue) else { return false }
      return write(inner)
    }
    return true
  }

  /// Runs `body` with a reader at the first byte written.
  public func withReader<T>(_ body: (inout WireReader) -> T) -> T {
    bytes.withUnsafeBytes { raw in
      // An empty buffer has no address: a reader over one byte that it may not read.
      var reader = WireReader(
        base: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 8)!, count: raw.count, bigEndian: false)
      return body(&reader)
    }
  }

  private mutating func pad(_ alignment: Int) {
    while bytes.count % alignment != 0 { bytes.append(0) }
  }

  private mutating func put<T: FixedWidthInteger>(_ value: T) {
    pad(MemoryLayout<T>.size)
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  private mutating func string(_ text: String) {
    put(UInt32(truncatingIfNeeded: text.utf8.count))
    bytes.append(contentsOf: text.utf8)
    bytes.append(0)
  }

  private mutating func signature(_ text: String) -> Bool {
    guard text.utf8.count <= 255 else { return false }
    bytes.append(UInt8(text.utf8.count))
    bytes.append(contentsOf: text.utf8)
    bytes.append(0)
    return true
  }

  /// Writes an array's length (filled in by `endArray`) and the padding to its elements' first;
  /// where the length is and where the elements start.
  private mutating func beginArray(_ element: String) -> (at: Int, start: Int) {
    put(UInt32(0))
    let at = bytes.count - 4
    pad(WireReader.alignment(of: element.utf8.first ?? 0))
    return (at, bytes.count)
  }

  /// The length counts the elements, not the padding before the first.
  private mutating func endArray(_ array: (at: Int, start: Int)) {
    let length = UInt32(truncatingIfNeeded: bytes.count - array.start).littleEndian
    withUnsafeBytes(of: length) { raw in
      for (offset, byte) in raw.enumerated() { bytes[array.at + offset] = byte }
    }
  }
}
