// libFuzzer entry for the Device1 PropertiesChanged reader (`DeviceDecoder`, Sources/BlueZ/
// DeviceUpdate.swift), which the scan runs on every advertisement BlueZ signals. Linked against
// the in-place wire reader (the DBus module's pure files), the BlueZ files the decoder and the
// generic path need, and BeaconCore, by Fuzz/run-hci.sh device-update.
//
// The input is a byte stream as read from the socket: messages are framed one after another and
// each is decoded three ways, which must agree:
// - by a decoder that remembers (its repeats and manufacturer-data caches carry from message to
//   message, as in a scan), and by one that decodes every message in full;
// - whatever they decode, by the generic path: the body read as `DBusValue`s and applied to a
//   `DeviceRecord`, as `DiscoverySession` does with a signal the fast path declines.
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
  guard let update = full else { return }
  if let companies = update.manufacturerData {
    precondition(companies.count <= DeviceEntries<UInt16>.limit, "more companies than the limit")
    precondition(zip(companies, companies.dropFirst()).allSatisfy { $0.companyID < $1.companyID }, "unsorted")
  }
  // The generic path, from the same bytes.
  var body = signal.body
  guard let interface = body.string(), interface.equals(BlueZ.Wire.deviceInterface),
    let changed = body.value(ofType: dictionary, depth: 0)
  else { preconditionFailure("decoded, but the body is not Device1's sa{sv}") }
  guard let path = signal.withPath({ ObjectPath($0.string) }), let key = DeviceKey(path: path) else {
    preconditionFailure("decoded, but the path names no device")
  }
  precondition(key == update.key, "the key read in place differs from the path's")
  guard var generic = DeviceRecord(path: path, properties: [:], at: .now) else { return }
  var fast = generic
  generic.apply(ObjectTree.properties(changed), invalidated: [])
  fast.apply(update)
  // ManufacturerData past the limit: the generic path keeps the same first companies.
  precondition(fast == generic, "the fast path and the generic path disagree")
}
