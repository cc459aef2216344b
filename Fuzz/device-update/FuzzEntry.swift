// libFuzzer entry for the Device1 PropertiesChanged reader (`DeviceDecoder`, Sources/BlueZ/
// DeviceUpdate.swift), which the scan runs on every advertisement BlueZ signals. Linked against
// the in-place wire reader (the DBus module's pure files), the BlueZ files the decoder and the
// generic path need, and BeaconCore, by Fuzz/run.sh.
//
// The input is a byte stream as read from the socket: messages are framed one after another and
// each is read by every door of the one Device1 property reader (`DevicePropertyReader`), which
// must agree:
// - by a decoder that remembers (its repeats and manufacturer-data caches carry from message to
//   message, as in a scan), and by one that decodes every message in full;
// - any body that starts `sa{sv}`, whatever its interface: read in full in place, as
//   `ManagedObjects` reads a device, and by the generic path, the dictionary read as
//   `DBusValue`s and written back (`DeviceChanges.init(_:)`), as `DiscoverySession` does with a
//   signal the fast path declines: the same changes;
// - whatever the fast decoder decodes, applied to a `DeviceRecord`, gives the record those
//   changes give.
// A decoded update holds at most `DeviceEntries.limit` companies, sorted, each once.

@testable import BeaconCore
@testable import BlueZ
@testable import DBus

let remembering = DeviceDecoder()
let dictionaryType: StaticString = "a{sv}"
let dictionary = UnsafeRawBufferPointer(start: dictionaryType.utf8Start, count: dictionaryType.utf8CodeUnitCount)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceUpdate(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let stream = UnsafeRawBufferPointer(start: start, count: count)
  var offset = 0
  while offset < count {
    let rest = UnsafeRawBufferPointer(rebasing: stream[offset...])
    guard let length = try? Wire.messageLength(rest), length <= rest.count else { break }
    let message = UnsafeRawBufferPointer(rebasing: rest[0..<length])
    if let header = Wire.header(message) {
      check(WireSignal(header: header, bytes: message), message)
    }
    offset += length
  }
  return 0
}

func check(_ signal: borrowing WireSignal, _ message: UnsafeRawBufferPointer) {
  let full = DeviceDecoder(repeats: nil).decode(signal)
  let remembered = remembering.decode(signal)
  precondition(full == remembered, "a remembered decode differs from a full one")
  let changes = bothDoors(signal.body)
  guard let update = full else { return }
  if let companies = update.manufacturerData {
    precondition(companies.count <= DeviceEntries<UInt16>.limit, "more companies than the limit")
    precondition(zip(companies, companies.dropFirst()).allSatisfy { $0.companyID < $1.companyID }, "unsorted")
  }
  var body = signal.body
  guard body.string()?.equals(BlueZ.Wire.deviceInterface) == true, let changes else {
    preconditionFailure("decoded, but the body is not Device1's sa{sv}")
  }
  guard let path = signal.withPath({ ObjectPath($0.string) }), let key = DeviceKey(path: path) else {
    preconditionFailure("decoded, but the path names no device")
  }
  precondition(key == update.key, "the key read in place differs from the path's")
  guard var generic = DeviceRecord(path: path, changes: DeviceChanges(), at: .now) else { return }
  var fast = generic
  generic.apply(changes, invalidated: [])
  fast.apply(update)
  // ManufacturerData past the limit: the generic path keeps the same first companies.
  precondition(fast == generic, "the fast path and the generic path disagree")
}

/// The `a{sv}` after the body's first string, read in place in full and by the generic path;
/// nil when either cannot read it. They must agree.
func bothDoors(_ start: WireReader) -> DeviceChanges? {
  var body = start
  guard body.string() != nil else { return nil }
  var values = body
  var inPlace = DeviceChanges()
  guard let end = body.beginArray(elementAlignment: 8),
    case .read = DevicePropertyReader.read(&body, end: end, into: &inPlace), body.position == end
  else { return nil }
  guard let changed = values.value(ofType: dictionary, depth: 0) else { return nil }
  let generic = DeviceChanges(ObjectTree.properties(changed))
  precondition(generic == inPlace, "the generic path and the in-place read disagree")
  return inPlace
}
