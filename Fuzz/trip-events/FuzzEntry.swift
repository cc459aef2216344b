// libFuzzer entry for the strict JSON reader that keeps bytes as they came (JSONText) and a trip
// batch's events (TripEvent.batch(fromJSON:)), the D-Bus TripEvents / `trip events` / outbox
// path. From any bytes: no crash, no stack overflow (nesting is bounded); what is accepted is
// written back as JSON the same reader takes to the same value; each event keeps text that is
// a piece of the input and reads back to its fields (as an element: an event may repeat a key
// but `type`, which `JSONText.parse` refuses everywhere). Linked against the BeaconCore module by
// Fuzz/run.sh.
@testable import BeaconCore
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTripEvents(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
  if let value = try? JSONText.parse(bytes) {
    let written = value.compactText
    guard let again = try? JSONText.parse(Array(written.utf8)) else {
      preconditionFailure("written JSON does not read back: \(written.prefix(200))")
    }
    precondition(again.compactText == written, "writing is not stable: \(written.prefix(200))")
  }
  guard let events = try? TripEvent.batch(fromJSON: bytes) else { return 0 }
  let input = String(decoding: bytes, as: UTF8.self)
  for event in events {
    guard let text = event.text else { preconditionFailure("an event read from text has none") }
    precondition(input.contains(text), "an event's text is not from the input")
    // Read as an element again: an event may repeat a key (but `type`), which `parse` refuses.
    let readBack = try? JSONText.elements(ofArray: Array("[\(text)]".utf8), interpreted: ["type"])
    precondition(readBack?.first?.value == .object(event.fields), "an event's text reads back differently")
    if (try? JSONText.parse(Array(text.utf8))) == nil {
      precondition(event.repeatsAKey, "an event's text that parse refuses repeats no key")
    }
  }
  let body = JSONValue.array(events.map(\.json)).compactText
  precondition((try? JSONText.elements(ofArray: Array(body.utf8)))?.map(\.text) == events.map(\.text))
  return 0
}

extension TripEvent {
  /// Whether the event's text has a key twice in some object (`parse` names it).
  fileprivate var repeatsAKey: Bool {
    guard let text else { return false }
    do {
      _ = try JSONText.parse(Array(text.utf8))
      return false
    } catch { return error.duplicateKey != nil }
  }
}
