// libFuzzer entry for the checks on the arguments of the daemon's D-Bus methods
// (org.beaconbridge.Bridge1): `BridgeRequest.parse`, which every call from the bus goes through
// before the daemon acts on it. Linked by Fuzz/run.sh against the DBus,
// BeaconCore, GZone and BeaconCrypto modules and a BridgeDaemon module of its configuration
// files and the request parser's.
//
// The input is text (UTF-8, repaired): the first line names a member; every other line (but an
// empty last one) is one argument, `CODE VALUE`, where CODE is a D-Bus type (s o g y b n q i u x t d; any other code
// gives an `ay` of the value's bytes) after any number of `v`s, each wrapping it in a variant.
// In a string, `\n` is a line feed and `\\` a backslash. The argument list is parsed as a call of
// the named member and of every member of Bridge1, and each result must be:
//
// - deterministic: parsing the same call again gives the same result;
// - typed honestly: what is accepted re-validates (a trip or device ID built again from its text
//   is the same ID, and is the argument), and a refusal is InvalidArgs (UnknownMethod only for
//   a member Bridge1 does not have);
// - silent about PairWithKey's key: the call with the key replaced by one of the same shape
//   (each character swapped for another of its kind: hex digit, other ASCII, or a scalar of the
//   same UTF-8 length) is refused with the same sentence, or accepted alike, so no sentence
//   depends on the key's text; and no sentence contains a key of 32 characters or more outside
//   the other arguments, each quoted as messages quote it.

import BeaconCore
import DBus
import FoundationEssentials

@testable import BridgeDaemon

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBridgeMethods(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
  var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
  // A file's last line feed ends its last argument; it starts none.
  if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
  guard !lines.isEmpty else { return 0 }
  let named = MemberName(String(lines.removeFirst()))
  let values = lines.map { argument($0) }
  check(named, values)
  for member in BridgeServiceNames.Method.all where member != named { check(member, values) }
  return 0
}

func check(_ member: MemberName, _ values: [DBusValue]) {
  let result = BridgeRequest.parse(member: member, values)
  precondition(BridgeRequest.parse(member: member, values) == result, "\(member): not deterministic")
  let known = BridgeServiceNames.Method.all.contains(member)
  switch result {
  case .failure(let error):
    precondition(error.name == (known ? .invalidArgs : .unknownMethod), "\(member): refused as \(error.name)")
    precondition(!error.message.isEmpty, "\(member): a refusal without a sentence")
  case .success(let request):
    precondition(known, "\(member): accepted, but Bridge1 has no such method")
    revalidate(member, request, values)
  }
  if member == BridgeServiceNames.Method.pairWithKey { keySilence(values, result) }
}

/// What was accepted is what the arguments said, and builds again from its own text.
func revalidate(_ member: MemberName, _ request: BridgeRequest, _ values: [DBusValue]) {
  func string(_ i: Int) -> String? { i < values.count ? values[i].string : nil }
  func same(_ id: TripID, _ i: Int) {
    precondition((try? TripID(id.rawValue)) == id && id.rawValue == string(i), "\(member): trip ID \(id)")
  }
  func same(_ id: DeviceID, _ i: Int) {
    precondition((try? DeviceID(id.rawValue)) == id && id.rawValue == string(i), "\(member): device ID \(id)")
  }
  func label(_ label: String?, _ i: Int) {
    precondition(label == string(i).flatMap { $0.isEmpty ? nil : $0 }, "\(member): label")
    if let label { precondition((try? PairingLabel.check(label)) != nil, "\(member): label \(label)") }
  }
  typealias Name = BridgeServiceNames.Method
  switch request {
  case .status: precondition(member == Name.status)
  case .pairings: precondition(member == Name.pairings)
  case .recentLogs: precondition(member == Name.recentLogs)
  case .gzoneRefresh: precondition(member == Name.gzoneRefresh)
  case .pair(let pairing):
    precondition(member == Name.pair)
    precondition(
      pairing.key == nil && pairing.uuid == string(0).flatMap(UUID.init(uuidString:)), "Pair: UUID")
    precondition(pairing.major.map(Int.init) ?? -1 == values[1].int, "Pair: major")
    precondition(pairing.minor.map(Int.init) ?? -1 == values[2].int, "Pair: minor")
    same(try! DeviceID(pairing.deviceId), 3)
    label(pairing.label, 4)
  case .pairWithKey(let request):
    precondition(member == Name.pairWithKey)
    precondition(
      request.key.isKey && request.key.bytes == string(1)!.utf8.map { $0 | 0x20 }, "PairWithKey: key")
    precondition(request.scheme.rawValue == string(0), "PairWithKey: scheme")
    switch request.scheme {
    case .eid:
      precondition(request.rotationExponent.map(Int.init) == values[2].int && request.rotationExponent! <= 15)
      precondition(request.beaconClock.map(Int.init) == values[3].int, "PairWithKey: clock")
    case .rpa:
      precondition(request.rotationExponent == nil && request.beaconClock == nil, "PairWithKey: rpa with K")
    }
    same(request.deviceId, 4)
    label(request.label, 5)
  case .unpair(let deviceId):
    precondition(member == Name.unpair)
    same(deviceId, 0)
  case .tripStart(let tripId):
    precondition(member == Name.tripStart)
    same(tripId, 0)
  case .tripEnd(let tripId):
    precondition(member == Name.tripEnd)
    same(tripId, 0)
  case .tripRetry(let tripId):
    precondition(member == Name.tripRetry)
    if let tripId {
      same(tripId, 0)
    } else {
      precondition(string(0)?.isEmpty ?? true, "TripRetry: dropped an ID")
    }
  case .tripAssign(let tripId, let deviceId):
    precondition(member == Name.tripAssign)
    same(tripId, 0)
    same(deviceId, 1)
  case .tripEvents(let tripId, let events):
    precondition(member == Name.tripEvents)
    same(tripId, 0)
    let json = string(1)!
    precondition(json.utf8.count <= TripEventBatch.maximumJSONBytes, "TripEvents: over the cap")
    precondition((try? TripEvent.batch(fromJSON: Array(json.utf8))) == events, "TripEvents: events")
  }
}

/// PairWithKey's answer does not depend on its key's text, only on its shape.
func keySilence(_ values: [DBusValue], _ result: Result<BridgeRequest, DBusError>) {
  guard values.count > 1, let key = values[1].string else { return }
  var shadowed = values
  shadowed[1] = replacingString(values[1], with: shadow(key))
  let other = BridgeRequest.parse(member: BridgeServiceNames.Method.pairWithKey, shadowed)
  switch (result, other) {
  case (.failure(let a), .failure(let b)):
    precondition(a == b, "PairWithKey: the refusal depends on the key: \(a.message) / \(b.message)")
    // Another argument, quoted as messages quote it, may hold the key's digits (a device ID
    // ending in `\0` then 31 digits reads `\00…`): judge only the text no other argument made.
    var rest = a.message
    for (offset, value) in values.enumerated() where offset != 1 {
      guard let text = value.string else { continue }
      rest = rest.replacing(text.quotedForMessage, with: "\u{1}")
    }
    precondition(key.count < 32 || !rest.contains(key), "PairWithKey: a refusal repeats the key")
  case (.success(.pairWithKey(var a)), .success(.pairWithKey(let b))):
    precondition(a.key != b.key, "PairWithKey: another key, the same digits")
    a.key = b.key
    precondition(a == b, "PairWithKey: another key, another request")
  default:
    preconditionFailure("PairWithKey: a key of the same shape is taken differently")
  }
}

/// `value` with the string inside its variants replaced.
func replacingString(_ value: DBusValue, with text: String) -> DBusValue {
  if case .variant(let inner) = value { return .variant(replacingString(inner, with: text)) }
  return .string(text)
}

/// Another text of `key`'s shape: every scalar swapped for another of its kind.
func shadow(_ key: String) -> String {
  var out = String.UnicodeScalarView()
  for scalar in key.unicodeScalars {
    switch scalar.value {
    case 0x30...0x39: out.append(Unicode.Scalar(0x30 + (scalar.value - 0x30 + 1) % 10)!)
    case 0x41...0x46: out.append(Unicode.Scalar(0x41 + (scalar.value - 0x41 + 1) % 6)!)
    case 0x61...0x66: out.append(Unicode.Scalar(0x61 + (scalar.value - 0x61 + 1) % 6)!)
    // ASCII that is no hex digit in either case (`| 0x20` lowers a letter): another such.
    case 0..<0x80: out.append(scalar == "z" ? "y" : "z")
    case 0x80..<0x800: out.append(scalar == "é" ? "è" : "é")
    case 0x800..<0x10000: out.append(scalar == "€" ? "£" : "€")
    default: out.append(scalar == "😀" ? "😁" : "😀")
    }
  }
  return String(out)
}

/// One argument line: `v…CODE VALUE`.
func argument(_ line: Substring) -> DBusValue {
  var rest = line.unicodeScalars[...]
  var variants = 0
  while rest.first == "v", variants < 8 {
    rest.removeFirst()
    variants += 1
  }
  let code = rest.popFirst()
  if rest.first == " " { rest.removeFirst() }
  let text = String(String.UnicodeScalarView(rest))
  var value: DBusValue
  switch code {
  case "s": value = .string(unescaped(text))
  case "o": value = .objectPath(ObjectPath(text))
  case "g": value = .signature(Signature(text))
  case "b": value = .bool(text == "true")
  case "d": value = .double(Double(text) ?? 0)
  case "y": value = .byte(UInt8(truncatingIfNeeded: integer(text)))
  case "n": value = .int16(Int16(truncatingIfNeeded: integer(text)))
  case "q": value = .uint16(UInt16(truncatingIfNeeded: integer(text)))
  case "i": value = .int32(Int32(truncatingIfNeeded: integer(text)))
  case "u": value = .uint32(UInt32(truncatingIfNeeded: integer(text)))
  case "x": value = .int64(integer(text))
  case "t": value = .uint64(UInt64(text) ?? UInt64(bitPattern: integer(text)))
  default: value = .bytes(Array(text.utf8))
  }
  for _ in 0..<variants { value = .variant(value) }
  return value
}

/// A number's text as a 64-bit integer, 0 when it is none.
func integer(_ text: String) -> Int64 { Int64(text) ?? 0 }

func unescaped(_ text: String) -> String {
  guard text.contains("\\") else { return text }
  var out = ""
  var escaping = false
  for character in text {
    if escaping {
      out.append(character == "n" ? "\n" : character)
      escaping = false
    } else if character == "\\" {
      escaping = true
    } else {
      out.append(character)
    }
  }
  return out
}
