// libFuzzer entry for the G-Zone payload loader: each of the four payloads from any bytes
// (GZoneLoad.parse), and the stored-load form (one object holding all four) through the whole
// derivation: state, its JSON, and the diff from an empty load. Output JSON must parse back
// (no "inf"). Linked against the BeaconCore and GZone modules by Fuzz/run.sh.
//
// JSON is read as the product reads it: with `JSONText` (`GZoneLoad.parse` for a payload,
// `GZoneStore` for the stored load), never with `JSONValue.parse`. That one is `JSONDecoder`,
// whose probes cost time in proportion to the depth at every nested object (each failed probe
// builds its coding path), so a corpus of nested inputs made the harness quadratic, and it
// would fuzz a reader the payloads never go through (numbers kept as their literal, a repeated
// key refused).
@testable import BeaconCore
import Foundation
@testable import GZone

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGZonePayload(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let data = Data(bytes: start, count: count)
  // One parse per input: bytes that are not JSON go through the loader's error path (its
  // diagnosis) for one payload; JSON is checked against all four.
  guard let json = try? JSONText.parse(Array(data)) else {
    let payload = GZonePayload.allCases[count % GZonePayload.allCases.count]
    _ = try? GZoneLoad.parse(data, as: payload, origin: payload.fileName)
    return 0
  }
  for payload in GZonePayload.allCases {
    _ = try? GZoneLoad.validate(json, as: payload, origin: payload.fileName)
  }
  for (key, value) in json.objectValue ?? [:] {
    if let payload = GZonePayload(rawValue: key) {
      _ = try? GZoneLoad.validate(value, as: payload, origin: key)
    }
  }
  guard let load = try? GZoneLoad(json: json, origin: "fuzz") else { return 0 }
  let state = GZoneState(load)
  check(state.jsonText)
  let empty = try? GZoneLoad(
    experienceLevels: .array([]), player: .object(["experience": .int(0)]), availableGames: .array([]),
    gameRounds: .array([]))
  if let empty {
    for event in GZoneDiff.events(from: empty, to: load) + GZoneDiff.events(from: load, to: empty) {
      check(event.jsonText)
      _ = event.summary
    }
  }
  precondition(GZoneDiff.events(from: load, to: load).isEmpty, "a load differs from itself")
  return 0
}

/// The output reads back with the strict reader. Its one limit that is not JSON's, the depth, is
/// no failure: an output nests an item a level or two deeper than the input held it.
private func check(_ text: String) {
  do { _ = try JSONText.parse(Array(text.utf8)) } catch {
    precondition(error.tooDeep, "output is not JSON (\(error)): \(text.prefix(200))")
  }
}
