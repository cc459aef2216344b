// libFuzzer entry for the in-place D-Bus wire reader (Sources/DBus/Wire.swift), which
// SignalSocket runs on every byte the bus sends, and its reader of whole values
// (Sources/DBus/WireValue.swift), which reads GetManagedObjects in place. Linked by
// Fuzz/run.sh against a DBus module of Wire.swift, WireValue.swift, DBusValue.swift,
// Names.swift, DBusError.swift and CString.swift (with Fuzz/dbus-wire/Signature.swift).
//
// The input is a byte stream as read from the socket: messages are framed one after another,
// each header is read, and each body is walked by its signature with every WireReader read,
// then read again value by value (`value(ofType:)`) and skipped (`skipValue`), which must agree.

@testable import DBus

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let stream = UnsafeRawBufferPointer(start: start, count: count)
  var offset = 0
  while offset < count {
    let rest = UnsafeRawBufferPointer(rebasing: stream[offset...])
    guard let length = try? Wire.messageLength(rest), length <= rest.count else { break }
    precondition(length >= Wire.fixedHeaderLength)
    let message = UnsafeRawBufferPointer(rebasing: rest[0..<length])
    let header = Wire.header(message)
    referenceAgrees(header, message)
    if let header {
      precondition(header.bodyStart <= length)
      let signal = WireSignal(header: header, bytes: message)
      _ = signal.interface(is: "org.freedesktop.DBus.Properties")
      _ = signal.member(is: "PropertiesChanged")
      _ = signal.signature(is: "sa{sv}as")
      _ = signal.withPath { $0.bytes.count }
      var body = signal.body
      let signature = header.signature.map { Array($0.bytes) } ?? []
      var index = 0
      while index < signature.count, walk(signature, &index, &body, depth: 0) {}
      precondition(body.position <= length, "read past the message")
      values(signature, WireSignal(header: header, bytes: message).body, length: length)
    }
    offset += length
  }
  return 0
}

/// Reads the body one complete type at a time as `DBusValue`s and skips it alongside: both stop
/// at the same place, and a value read has the type it was read as.
func values(_ signature: [UInt8], _ start: WireReader, length: Int) {
  var reader = start
  var skipper = start
  signature.withUnsafeBytes { type in
    var index = 0
    while index < type.count {
      let begin = index
      guard WireReader.skipType(type, &index) else { return }
      let one = UnsafeRawBufferPointer(rebasing: type[begin..<index])
      let value = reader.value(ofType: one, depth: 0)
      var skipIndex = 0
      let skipped = skipper.skip(one, &skipIndex, depth: 0) && skipIndex == one.count
      precondition(reader.position <= length && skipper.position <= length, "read past the message")
      precondition((value != nil) == skipped, "reading and skipping disagree")
      guard let value else { return }
      precondition(reader.position == skipper.position, "reading and skipping end apart")
      precondition(
        value.signature.rawValue == String(decoding: one, as: UTF8.self), "a value of another type")
    }
  }
}

/// Reads one complete type from `signature[index...]`; false when the data does not fit.
func walk(_ signature: [UInt8], _ index: inout Int, _ body: inout WireReader, depth: Int) -> Bool {
  guard depth < 64, index < signature.count else { return false }
  let code = signature[index]
  index += 1
  switch code {
  case UInt8(ascii: "y"): return body.byte() != nil
  case UInt8(ascii: "n"): return body.int16() != nil
  case UInt8(ascii: "q"): return body.uint16() != nil
  case UInt8(ascii: "i"): return body.int32() != nil
  case UInt8(ascii: "b"), UInt8(ascii: "u"), UInt8(ascii: "h"): return body.uint32() != nil
  case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"): return body.skipBasic(code)
  case UInt8(ascii: "s"), UInt8(ascii: "o"):
    guard let text = body.string() else { return false }
    precondition(text.bytes.count == text.count)
    precondition(text.equals("org.bluez.Device1") == text.equals(WireName("org.bluez.Device1")))
    return true
  case UInt8(ascii: "g"): return body.signature() != nil
  case UInt8(ascii: "v"):
    guard let inner = body.signature() else { return false }
    let innerSignature = Array(inner.bytes)
    var innerIndex = 0
    return walk(innerSignature, &innerIndex, &body, depth: depth + 1)
  case UInt8(ascii: "a"):
    guard index < signature.count else { return false }
    let element = signature[index]
    if element == UInt8(ascii: "y") {
      index += 1
      // In place and copied must agree (the decoder compares ManufacturerData in place).
      var inPlace = body
      let range = inPlace.byteRange()
      let copy = body.bytes()
      precondition((range.map { Array($0) }) == copy && inPlace.position == body.position)
      return copy != nil
    }
    let alignment =
      [UInt8(ascii: "{"), UInt8(ascii: "("), UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d")]
        .contains(element) ? 8 : 4
    guard let end = body.beginArray(elementAlignment: alignment) else { return false }
    let elementStart = index
    var elementEnd = index
    var rounds = 0
    while body.position < end {
      elementEnd = elementStart
      let before = body.position
      guard walk(signature, &elementEnd, &body, depth: depth + 1), body.position > before else {
        return false
      }
      rounds += 1
      precondition(rounds <= 1 << 27)
    }
    // Skip the element type for an empty array.
    if elementEnd == elementStart { return skipType(signature, &index) }
    index = elementEnd
    return body.position == end
  case UInt8(ascii: "("), UInt8(ascii: "{"):
    let close = code == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
    guard body.align(8) else { return false }
    while index < signature.count, signature[index] != close {
      guard walk(signature, &index, &body, depth: depth + 1) else { return false }
    }
    guard index < signature.count else { return false }
    index += 1
    return true
  default:
    return false
  }
}

/// Moves past one complete type in a signature without reading data.
func skipType(_ signature: [UInt8], _ index: inout Int) -> Bool {
  guard index < signature.count else { return false }
  let code = signature[index]
  index += 1
  switch code {
  case UInt8(ascii: "a"): return skipType(signature, &index)
  case UInt8(ascii: "("), UInt8(ascii: "{"):
    let close = code == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
    while index < signature.count, signature[index] != close {
      guard skipType(signature, &index) else { return false }
    }
    guard index < signature.count else { return false }
    index += 1
    return true
  default: return true
  }
}

/// `Wire.header` reads each field's code and signature as one word; this reads the same header
/// value by value with a `WireReader` (as it was read before), and both must agree on every field.
func referenceAgrees(_ fast: Wire.Header?, _ bytes: UnsafeRawBufferPointer) {
  func same(_ a: WireString?, _ b: WireString?) -> Bool {
    a?.pointer == b?.pointer && a?.count == b?.count
  }
  var path: WireString?
  var interface: WireString?
  var member: WireString?
  var errorName: WireString?
  var sender: WireString?
  var signature: WireString?
  var replySerial: UInt32?
  let reference: Int? = {
    guard bytes.count >= 16, let base = bytes.baseAddress else { return nil }
    var reader = WireReader(base: base, count: bytes.count, bigEndian: bytes[0] == UInt8(ascii: "B"))
    let fieldsLength = Int(Wire.load32(bytes, 12, bigEndian: reader.bigEndian))
    reader.position = 16
    let fieldsEnd = 16 + fieldsLength
    guard fieldsEnd <= bytes.count else { return nil }
    while reader.position < fieldsEnd {
      guard reader.align(8), let code = reader.byte(), let kind = reader.signature(), kind.count == 1
      else { return nil }
      switch (code, kind.first) {
      case (1, UInt8(ascii: "o")): guard let value = reader.string() else { return nil }; path = value
      case (2, UInt8(ascii: "s")): guard let value = reader.string() else { return nil }; interface = value
      case (3, UInt8(ascii: "s")): guard let value = reader.string() else { return nil }; member = value
      case (4, UInt8(ascii: "s")): guard let value = reader.string() else { return nil }; errorName = value
      case (5, UInt8(ascii: "u")): guard let value = reader.uint32() else { return nil }; replySerial = value
      case (7, UInt8(ascii: "s")): guard let value = reader.string() else { return nil }; sender = value
      case (8, UInt8(ascii: "g")): guard let value = reader.signature() else { return nil }; signature = value
      default: guard reader.skipBasic(kind.first) else { return nil }
      }
    }
    guard reader.position == fieldsEnd, reader.align(8) else { return nil }
    return reader.position
  }()
  precondition((fast == nil) == (reference == nil), "the header readers disagree on whether it is valid")
  guard let fast, let reference else { return }
  precondition(fast.bodyStart == reference && fast.replySerial == replySerial, "the header readers disagree")
  precondition(fast.type == bytes[1] && fast.serial == Wire.load32(bytes, 8, bigEndian: bytes[0] == 66))
  precondition(
    same(fast.path, path) && same(fast.interface, interface) && same(fast.member, member)
      && same(fast.errorName, errorName) && same(fast.sender, sender) && same(fast.signature, signature),
    "the header readers disagree on a field")
}
