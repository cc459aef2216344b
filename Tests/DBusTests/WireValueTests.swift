import Testing

@testable import DBus

/// `WireReader.value(ofType:)` and `skipValue(ofType:)` against libdbus's type reader
/// (`MessageReader`, the generic path): for every type, the same `DBusValue`, and skipping lands
/// where reading does.
struct WireValueTests {
  static func values() -> [DBusValue] {
    [
      .byte(7), .bool(true), .bool(false), .int16(-2), .uint16(65_000), .int32(-70_000),
      .uint32(4_000_000_000),
      .int64(-1 << 40), .uint64(1 << 63), .double(-2.5), .string(""), .string("grüße"),
      .objectPath("/org/bluez/hci0"), .signature("a{sv}"), .bytes([]), .bytes([1, 2, 3]),
      .array(element: "s", []), .array(element: "s", [.string("a"), .string("bc")]),
      .array(element: "x", [.int64(1), .int64(-1)]),
      .array(element: "q", [.uint16(1), .uint16(2), .uint16(3)]),
      .array(element: "ay", [.bytes([1]), .bytes([])]),
      .array(element: "(yd)", [.structure([.byte(1), .double(0.5)])]),
      .dictionary(key: "s", value: "v", []),
      .stringVariantDictionary(["RSSI": .int16(-61), "Name": .string("van"), "Paired": .bool(true)]),
      .dictionary(
        key: "q", value: "v",
        [.init(.uint16(0x004C), .variant(.bytes([2, 0x15]))), .init(.uint16(1), .variant(.bytes([])))]),
      .dictionary(
        key: "o", value: "a{sa{sv}}", [.init(.objectPath("/a"), .dictionary(key: "s", value: "a{sv}", []))]),
      .array(
        element: "a{qv}", [.dictionary(key: "q", value: "v", [.init(.uint16(5), .variant(.bytes([9])))])]),
      .structure([.byte(1), .structure([.string("x"), .int32(2)]), .array(element: "u", [])]),
      .variant(.variant(.uint32(3))),
      .variant(.array(element: "(qs)", [.structure([.uint16(1), .string("s")])])),
    ]
  }

  @Test func readsWhatLibdbusReads() throws {
    let values = Self.values()
    let message = try Message.signal(path: "/", interface: "org.example.Values", member: "Values")
    try message.append(values)
    let generic = MessageReader.body(of: message.pointer)
    #expect(generic == values)
    try WireMessage.withMarshalled(message.pointer) { wire in
      var reader = wire.body
      var skipper = wire.body
      let signature = Array(wire.signature.utf8)
      try signature.withUnsafeBytes { type in
        var index = 0
        var read: [DBusValue] = []
        while index < type.count {
          let start = index
          var end = index
          #expect(WireReader.skipType(type, &end))
          let one = UnsafeRawBufferPointer(rebasing: type[start..<end])
          let value = reader.value(ofType: one, depth: 0)
          read.append(try #require(value, "\(String(decoding: one, as: UTF8.self))"))
          var skipIndex = 0
          #expect(skipper.skip(one, &skipIndex, depth: 0) && skipIndex == one.count)
          #expect(skipper.position == reader.position)
          index = end
        }
        #expect(read == generic)
        #expect(reader.position == wire.length)
      }
    }
  }

  /// Types that are not one complete type, and values cut short, are nil, never a read past the
  /// end.
  @Test func refusesWhatDoesNotFit() throws {
    let message = try Message.signal(path: "/", interface: "org.example.Values", member: "Values")
    try message.append([.stringVariantDictionary(["RSSI": .int16(-61)]), .string("tail")])
    try WireMessage.withMarshalled(message.pointer) { wire in
      for type in ["", "a", "a{", "a{s}", "a{svv}", "()", "(", "z", "{sv}"] {
        var reader = wire.body
        var skipper = wire.body
        let bytes = Array(type.utf8)
        bytes.withUnsafeBytes { raw in
          #expect(reader.value(ofType: raw, depth: 0) == nil, "\(type)")
          var index = 0
          #expect(!(skipper.skip(raw, &index, depth: 0) && index == raw.count), "\(type)")
        }
      }
    }
    // Cut short anywhere: nil, and no read past the cut.
    let bytes = try WireMessage.withMarshalled(message.pointer) { wire in
      (Array(UnsafeRawBufferPointer(start: wire.base, count: wire.count)), wire.body.position)
    }
    let type = Array("a{sv}".utf8)
    for length in bytes.1..<(bytes.0.count - 12) {
      bytes.0.withUnsafeBytes { raw in
        var reader = WireReader(base: raw.baseAddress!, count: length, bigEndian: false)
        reader.position = bytes.1
        type.withUnsafeBytes { #expect(reader.value(ofType: $0, depth: 0) == nil, "cut at \(length)") }
        #expect(reader.position <= length)
      }
    }
  }
}
