import BeaconCore
import DBus

/// The one reader of a Device1 property dictionary (`a{sv}`): every door by which Device1
/// properties arrive reads them here, from the wire format in place. The fast decoder
/// (`DeviceDecoder`) reads a PropertiesChanged's dictionary straight from the received message,
/// `ManagedObjects` each device's in the GetManagedObjects reply, and the generic path (a
/// `Signal`'s `DBusValue`s: InterfacesAdded, a PropertiesChanged the fast decoder declined) has
/// its values written back into the wire format (`WireWriter`, `DeviceChanges.init(_:)`) and
/// read here too. So each property is interpreted once: which names count (compared as bytes
/// with `BlueZ.Wire`), which types, what a value of another type means.
///
/// What is read goes into a `DevicePropertySink`, specialized for each (no existential, no
/// closure per property). A sink that takes `advertisementOnly` (the fast decoder) takes RSSI,
/// TxPower and ManufacturerData in BlueZ's own types (`n`, `a{qv}` of `ay`), and anything else
/// ends the read (`declined`): the generic path reads that message, and logs what is malformed.
/// Every other sink takes every property the mirror keeps, in any type, as the generic
/// `DBusValue` accessors took them: variants unwrapped; RSSI and TxPower any integer; Name and
/// Address `s`; Paired, Trusted and Connected `b`; ManufacturerData and ServiceData a dictionary
/// or an array of them (python-dbusmock's `aa{qv}`), an entry of another key or value type
/// skipped. A value of another type clears what the property held (nil, empty, false); RSSI,
/// TxPower, ManufacturerData and ServiceData of another type are also reported
/// (`DevicePropertySink.malformed`).
enum DevicePropertyReader {
  typealias Name = BlueZ.Wire

  /// How a read ended.
  enum Outcome {
    case read
    /// A property's name does not fit the message.
    case nameDoesNotFit
    /// The value of the property named so does not fit its type, or the message.
    case valueDoesNotFit(WireString)
    /// A property or a type an `advertisementOnly` sink does not take.
    case declined
  }

  /// Reads the dictionary's entries from `body`'s position (just past the array's length) up to
  /// `end`, into `sink`. The caller checks that the last entry ends at `end`.
  @inline(__always)
  static func read<Sink: DevicePropertySink>(_ body: inout WireReader, end: Int, into sink: inout Sink)
    -> Outcome
  {
    let strict = Sink.advertisementOnly
    while body.position < end {
      guard body.align(8), let name = body.string() else { return strict ? .declined : .nameDoesNotFit }
      // A lenient read checks the whole value first, as the generic path's reader does, and
      // then interprets it knowing that it fits.
      var valueEnd = 0
      if !strict {
        var check = body
        guard check.skipVariant() else { return .valueDoesNotFit(name) }
        valueEnd = check.position
      }
      guard let type = body.signature() else { return strict ? .declined : .valueDoesNotFit(name) }
      if name.equals(Name.rssi) {
        if type.equals(Name.int16) {
          guard body.align(2) else { return .declined }
          let offset = body.position
          guard let value = body.int16() else { return .declined }
          sink.rssi(value, at: offset)
        } else {
          guard !strict else { return .declined }
          let (value, inner) = integer(type, &body)
          sink.integer(.rssi, value, type: inner)
        }
      } else if name.equals(Name.txPower) {
        if type.equals(Name.int16) {
          guard let value = body.int16() else { return .declined }
          sink.txPower(value)
        } else {
          guard !strict else { return .declined }
          let (value, inner) = integer(type, &body)
          sink.integer(.txPower, value, type: inner)
        }
      } else if name.equals(Name.manufacturerData) {
        guard manufacturerData(type, &body, into: &sink) else {
          return strict ? .declined : .valueDoesNotFit(name)
        }
      } else {
        guard !strict else { return .declined }
        other(name, type, &body, into: &sink)
      }
      if !strict { body.position = valueEnd }
    }
    return .read
  }

  /// ManufacturerData. BlueZ's `a{qv}` of `ay` is read without a `DeviceEntries` when it holds
  /// one company (a beacon's case); any other type only by a lenient sink.
  @inline(__always)
  private static func manufacturerData<Sink: DevicePropertySink>(
    _ type: WireString, _ body: inout WireReader, into sink: inout Sink
  ) -> Bool {
    guard type.equals(Name.companies) else {
      guard !Sink.advertisementOnly else { return false }
      var entries = DeviceEntries<UInt16>()
      let inner = unwrap(type, &body)
      guard let fits = dictionaries(inner, &body, into: &entries) else { return false }
      sink.manufacturerData(entries)
      if !fits { sink.malformed(.manufacturerData, type: inner) }
      return true
    }
    guard let end = body.beginArray(elementAlignment: 8) else { return false }
    let start = body.position
    // The common case, one company: handed on in place.
    if body.align(8), let company = body.uint16(), body.signature()?.equals(Name.bytes) == true,
      let bytes = body.byteRange(), body.position == end
    {
      sink.manufacturerData(company: company, bytes: bytes)
      return true
    }
    body.position = start
    var out = DeviceEntries<UInt16>()
    while body.position < end {
      guard body.align(8), let company = body.uint16() else { return false }
      if Sink.advertisementOnly {
        guard body.signature()?.equals(Name.bytes) == true, let bytes = body.byteRange() else { return false }
        if let index = out.admit(company) { out.set(Array(bytes), at: index) }
      } else {
        guard let content = body.signature(), entryValue(company, content, &body, into: &out) else {
          return false
        }
      }
    }
    guard body.position == end else { return false }
    sink.manufacturerData(out)
    return true
  }

  /// Every property but RSSI, TxPower and ManufacturerData, for a lenient sink. The value is
  /// known to fit (`read` checked it); one of another type is left for `read` to move past.
  private static func other<Sink: DevicePropertySink>(
    _ name: WireString, _ type: WireString, _ body: inout WireReader, into sink: inout Sink
  ) {
    let inner = unwrap(type, &body)
    if name.equals(Name.serviceData) {
      var entries = DeviceEntries<ServiceUUID>()
      let fits = dictionaries(inner, &body, into: &entries) ?? false
      sink.serviceData(entries)
      if !fits { sink.malformed(.serviceData, type: inner) }
    } else if name.equals(Name.name) {
      sink.name(inner.isType("s") ? body.string()?.string : nil)
    } else if name.equals(Name.address) {
      sink.address(inner.isType("s") ? body.string().flatMap { BluetoothAddress($0.string) } : nil)
    } else if let flag = flag(name) {
      sink.flag(flag, inner.isType("b") ? (body.uint32().map { $0 != 0 } ?? false) : false)
    }
  }

  private static func flag(_ name: WireString) -> DeviceChanges.Property? {
    if name.equals(Name.paired) { return .paired }
    if name.equals(Name.trusted) { return .trusted }
    if name.equals(Name.connected) { return .connected }
    return nil
  }

  /// The type inside any number of variants, `body` moved to its value.
  private static func unwrap(_ type: WireString, _ body: inout WireReader) -> WireString {
    var type = type
    while type.isType("v"), let inner = body.signature() { type = inner }
    return type
  }

  /// An integer of any type (`y n q i u x t`) that fits in `Int`; nil for any other type. With
  /// the type inside the variants, for a report.
  private static func integer(_ type: WireString, _ body: inout WireReader) -> (Int?, WireString) {
    let inner = unwrap(type, &body)
    guard inner.count == 1 else { return (nil, inner) }
    let value: Int? =
      switch inner[0] {
      case UInt8(ascii: "y"): body.byte().map(Int.init)
      case UInt8(ascii: "n"): body.int16().map(Int.init)
      case UInt8(ascii: "q"): body.uint16().map(Int.init)
      case UInt8(ascii: "i"): body.int32().map(Int.init)
      case UInt8(ascii: "u"): body.uint32().map(Int.init)
      case UInt8(ascii: "x"): body.int64().map(Int.init)
      case UInt8(ascii: "t"): body.uint64().flatMap { Int(exactly: $0) }
      default: nil
      }
    return (value, inner)
  }

  /// The entries of a dictionary keyed by `Key`'s type whose values are (or hold, in variants)
  /// `ay`, or of an array of such dictionaries (in variants or not), into `out`; entries of
  /// other types are skipped. Whether a dictionary was there, or an empty array (a shape
  /// python-dbusmock sends before it has data): false reports the type. nil: does not fit.
  private static func dictionaries<Key: DeviceEntryKey>(
    _ type: WireString, _ body: inout WireReader, into out: inout DeviceEntries<Key>
  ) -> Bool? {
    guard type.count >= 2, type[0] == UInt8(ascii: "a"), type[1] != UInt8(ascii: "y") else { return false }
    if type[1] == UInt8(ascii: "{") { return dictionary(type, &body, into: &out) ? true : nil }
    let element = type.slice(1..<type.count)
    guard let end = body.beginArray(elementAlignment: WireReader.alignment(of: element[0])) else {
      return nil
    }
    let empty = body.position == end
    var found = false
    while body.position < end {
      let item = unwrap(element, &body)
      if item.count >= 2, item[0] == UInt8(ascii: "a"), item[1] == UInt8(ascii: "{") {
        guard dictionary(item, &body, into: &out) else { return nil }
        found = true
      } else {
        guard body.skipValue(ofType: item) else { return nil }
      }
    }
    return found || empty
  }

  /// One `a{KV}` (`type`): the entries whose key is `Key`'s type and whose value is `ay`.
  private static func dictionary<Key: DeviceEntryKey>(
    _ type: WireString, _ body: inout WireReader, into out: inout DeviceEntries<Key>
  ) -> Bool {
    let key = type.slice(2..<3)
    let value = type.slice(3..<(type.count - 1))
    guard let end = body.beginArray(elementAlignment: 8) else { return false }
    while body.position < end {
      guard body.align(8) else { return false }
      if key.isType(Key.code) {
        guard let read = Key.read(&body) else { return false }
        if let read {
          guard entryValue(read, value, &body, into: &out) else { return false }
          continue
        }
      } else {
        guard body.skipValue(ofType: key) else { return false }
      }
      guard body.skipValue(ofType: value) else { return false }
    }
    return body.position == end
  }

  /// An entry's value of `type`: kept when it is (or holds, in variants) `ay`, else skipped.
  private static func entryValue<Key: Equatable>(
    _ key: Key, _ type: WireString, _ body: inout WireReader, into out: inout DeviceEntries<Key>
  ) -> Bool {
    let inner = unwrap(type, &body)
    guard inner.equals(Name.bytes) else { return body.skipValue(ofType: inner) }
    guard let bytes = body.byteRange() else { return false }
    if let index = out.admit(key) { out.set(Array(bytes), at: index) }
    return true
  }
}

/// What the reader hands a Device1 property to. The fast decoder's sink keeps an update
/// (`DeviceDecoder`); `DeviceChanges` keeps every property.
protocol DevicePropertySink {
  /// Only RSSI, TxPower and ManufacturerData in BlueZ's types; anything else declines the read.
  static var advertisementOnly: Bool { get }
  /// RSSI as BlueZ sends it (`n`), which starts at `offset` in the message.
  mutating func rssi(_ value: Int16, at offset: Int)
  /// TxPower as BlueZ sends it (`n`).
  mutating func txPower(_ value: Int16)
  /// ManufacturerData of exactly one company, in place (valid while the read runs).
  mutating func manufacturerData(company: UInt16, bytes: UnsafeRawBufferPointer)
  mutating func manufacturerData(_ entries: DeviceEntries<UInt16>)

  // Only for sinks that are not `advertisementOnly`.
  /// RSSI or TxPower of another type: its value, nil when not an integer.
  mutating func integer(_ property: DeviceChanges.Property, _ value: Int?, type: WireString)
  mutating func serviceData(_ entries: DeviceEntries<ServiceUUID>)
  mutating func name(_ value: String?)
  mutating func address(_ value: BluetoothAddress?)
  mutating func flag(_ property: DeviceChanges.Property, _ value: Bool)
  /// The property was of `type`, which holds none of what it should: read as empty, reported.
  mutating func malformed(_ property: DeviceChanges.Property, type: WireString)
}

extension DevicePropertySink {
  mutating func integer(_ property: DeviceChanges.Property, _ value: Int?, type: WireString) {}
  mutating func serviceData(_ entries: DeviceEntries<ServiceUUID>) {}
  mutating func name(_ value: String?) {}
  mutating func address(_ value: BluetoothAddress?) {}
  mutating func flag(_ property: DeviceChanges.Property, _ value: Bool) {}
  mutating func malformed(_ property: DeviceChanges.Property, type: WireString) {}
}

/// A dictionary key the reader keeps entries by: ManufacturerData's company (`q`), ServiceData's
/// UUID (`s`).
protocol DeviceEntryKey: Equatable {
  static var code: Unicode.Scalar { get }
  /// The key at `body`; nil: it does not fit; `.some(nil)`: it fits but is no key (not a UUID).
  static func read(_ body: inout WireReader) -> Self??
}

extension UInt16: DeviceEntryKey {
  static var code: Unicode.Scalar { "q" }
  static func read(_ body: inout WireReader) -> UInt16?? { body.uint16().map { $0 } }
}

extension ServiceUUID: DeviceEntryKey {
  static var code: Unicode.Scalar { "s" }
  static func read(_ body: inout WireReader) -> ServiceUUID?? { body.string().map { ServiceUUID($0.string) } }
}

extension WireString {
  /// Whether it is the one-character type `code`.
  func isType(_ code: Unicode.Scalar) -> Bool { count == 1 && self[0] == UInt8(ascii: code) }
}
