import BeaconCore
import BeaconCrypto
import DBus
import FoundationEssentials

/// A call of `org.beaconbridge.Bridge1` with its arguments checked and typed: what
/// `BridgeMethods` acts on. `parse` is pure (no store, no bridge, no clock, no bus), so that it
/// is fuzzed on its own (Fuzz/bridge-methods) and every refusal is tested as a sentence.
///
/// A refused call is the standard `org.freedesktop.DBus.Error.InvalidArgs`, with the sentence the
/// CLI would print for the same value (the identifier types' messages). The methods that take no
/// arguments ignore any that are sent, as they always have.
enum BridgeRequest: Equatable, Sendable {
  case status
  case pairings
  case recentLogs
  case pair(Pairing)
  case pairWithKey(KeyPairingRequest)
  case unpair(DeviceID)
  case tripStart(TripID)
  case tripEvents(TripID, [TripEvent])
  case tripEnd(TripID)
  /// nil: every trip's dead letters (no argument, or an empty one).
  case tripRetry(TripID?)
  case tripAssign(TripID, DeviceID)
  case gzoneRefresh

  /// PairWithKey's arguments. The reply is the pairing as `Pairings` lists it: no key.
  struct KeyPairingRequest: Equatable, Sendable {
    var scheme: KeyedIdentity.Scheme
    var key: KeyDigits
    /// K, for "eid"; nil for "rpa", whose K is ignored.
    var rotationExponent: UInt8?
    /// The beacon's clock when the call was made, for "eid"; nil for "rpa". The daemon turns it
    /// into an offset from its own clock, which `parse` does not read.
    var beaconClock: UInt32?
    var deviceId: DeviceID
    var label: String?
  }

  /// A key's hex digits in lower case, as the store keeps them (`Store.pairByKey`), wiped
  /// (`SecretBytes.wipe`) when the last reference to them goes: a call refused after its key was
  /// read, and one done with, leave no copy behind in memory they owned. A class, so that a copy
  /// of the request shares the one array rather than leaving a copy unwiped.
  ///
  /// `@unchecked Sendable`: the array is written only by the deinitializer, when no one else can
  /// read it.
  final class KeyDigits: Equatable, @unchecked Sendable {
    private(set) var bytes: [UInt8]

    /// The text's UTF-8 with A…F lowered, whatever it holds: the caller checks it. Only A…F:
    /// `| 0x20` on every byte also turned the control characters U+0010…U+0019 into 0…9, and
    /// took them as digits of a key.
    init(_ text: String) {
      bytes = text.utf8.map { (0x41...0x46).contains($0) ? $0 | 0x20 : $0 }
    }

    deinit { bytes.withUnsafeMutableBytes { SecretBytes.wipe($0) } }

    /// 32 hex digits: a key of 16 bytes.
    var isKey: Bool { bytes.count == 32 && bytes.allSatisfy(PairingKeyFile.isLowerHexDigit) }

    static func == (a: KeyDigits, b: KeyDigits) -> Bool { a.bytes == b.bytes }
  }

  /// What `values` ask of `member`, or why they are refused. A member Bridge1 does not have is
  /// `UnknownMethod` (the service answers those before asking).
  static func parse(member: MemberName, _ values: [DBusValue]) -> Result<BridgeRequest, DBusError> {
    let args = Arguments(values)
    typealias Name = BridgeServiceNames.Method
    switch member {
    case Name.status: return .success(.status)
    case Name.pairings: return .success(.pairings)
    case Name.recentLogs: return .success(.recentLogs)
    case Name.gzoneRefresh: return .success(.gzoneRefresh)
    case Name.pair: return pair(args).map(BridgeRequest.pair)
    case Name.pairWithKey: return pairWithKey(args).map(BridgeRequest.pairWithKey)
    case Name.unpair: return args.deviceID(0, "Unpair takes (s deviceId)").map(BridgeRequest.unpair)
    case Name.tripStart: return args.tripID(0, "TripStart takes (s tripId)").map(BridgeRequest.tripStart)
    case Name.tripEvents: return tripEvents(args)
    case Name.tripEnd: return args.tripID(0, "TripEnd takes (s tripId)").map(BridgeRequest.tripEnd)
    case Name.tripRetry:
      // No argument, or an empty one, retries every trip's dead letters.
      guard let text = args.string(0), !text.isEmpty else { return .success(.tripRetry(nil)) }
      return args.tripID(0, "TripRetry takes (s tripId)").map(BridgeRequest.tripRetry)
    case Name.tripAssign:
      let signature = "TripAssign takes (s tripId, s deviceId)"
      return args.tripID(0, signature).flatMap { tripId in
        args.deviceID(1, signature).map { .tripAssign(tripId, $0) }
      }
    default:
      return .failure(
        DBusError(
          .unknownMethod, "\(BridgeServiceNames.interface) has no method \(member.rawValue.quotedForMessage)")
      )
    }
  }

  /// A refusal: `org.freedesktop.DBus.Error.InvalidArgs` with `message`.
  static func invalidArgs(_ message: String) -> DBusError { DBusError(.invalidArgs, message) }

  private static func pair(_ args: Arguments) -> Result<Pairing, DBusError> {
    guard let uuidText = args.string(0), let major = args.int(1), let minor = args.int(2),
      let deviceText = args.string(3)
    else {
      return .failure(invalidArgs("Pair takes (s uuid, i major, i minor, s deviceId, s label); -1 = any"))
    }
    do throws(IdentifierError) {
      // -1 is the wire's "any"; every other number must be 0…65535: never clamped.
      guard let uuid = UUID(uuidString: uuidText) else {
        throw IdentifierError(
          field: "UUID", value: uuidText, rule: "is not a UUID like E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
      }
      let identity = try PairingIdentity(
        uuid: uuid, major: major == -1 ? nil : major, minor: minor == -1 ? nil : minor)
      let label = args.string(4).flatMap { $0.isEmpty ? nil : $0 }
      if let label { try PairingLabel.check(label) }
      return .success(Pairing(identity: identity, deviceId: try DeviceID(deviceText), label: label))
    } catch {
      return .failure(invalidArgs(error.description))
    }
  }

  /// (s scheme "eid"|"rpa", s key: 32 hex digits, i K, x beacon clock now, s deviceId, s label);
  /// K and the clock are ignored for "rpa". No refusal repeats the key: the sentences name what
  /// is wrong with it, never its text.
  private static func pairWithKey(_ args: Arguments) -> Result<KeyPairingRequest, DBusError> {
    let signature =
      "PairWithKey takes (s scheme, s key, i rotationExponent, x beaconClock, s deviceId, s label)"
    guard let schemeText = args.string(0), let keyText = args.string(1), let k = args.int(2),
      let clock = args.int(3), let deviceText = args.string(4)
    else { return .failure(invalidArgs(signature)) }
    guard let scheme = KeyedIdentity.Scheme(rawValue: schemeText) else {
      return .failure(invalidArgs("scheme must be eid or rpa, not \(schemeText.quotedForMessage)"))
    }
    // Wiped when this returns, unless the request holds them.
    let key = KeyDigits(keyText)
    guard key.isKey else { return .failure(invalidArgs("key must be 32 hex digits (16 bytes)")) }
    let deviceId: DeviceID
    let label = args.string(5).flatMap { $0.isEmpty ? nil : $0 }
    do throws(IdentifierError) {
      deviceId = try DeviceID(deviceText)
      if let label { try PairingLabel.check(label) }
    } catch {
      return .failure(invalidArgs(error.description))
    }
    var exponent: UInt8?
    var beaconClock: UInt32?
    if scheme == .eid {
      guard let k = UInt8(exactly: k), k <= 15 else {
        return .failure(invalidArgs("rotationExponent must be 0 to 15"))
      }
      guard let clock = UInt32(exactly: clock) else {
        return .failure(invalidArgs("beaconClock must be 0 to 4294967295"))
      }
      exponent = k
      beaconClock = clock
    }
    return .success(
      KeyPairingRequest(
        scheme: scheme, key: key, rotationExponent: exponent, beaconClock: beaconClock, deviceId: deviceId,
        label: label))
  }

  private static func tripEvents(_ args: Arguments) -> Result<BridgeRequest, DBusError> {
    let signature = "TripEvents takes (s tripId, s eventsJSONArray)"
    let tripId: TripID
    switch args.tripID(0, signature) {
    case .success(let id): tripId = id
    case .failure(let error): return .failure(error)
    }
    guard let text = args.string(1) else { return .failure(invalidArgs(signature)) }
    // The CLI's cap, checked on the length before any decoding (`TripEventBatch.maximumJSONBytes`).
    if let refusal = TripEventBatch.refusal(jsonBytes: text.utf8.count) {
      return .failure(invalidArgs(refusal))
    }
    do throws(TripEventError) {
      return .success(.tripEvents(tripId, try TripEvent.batch(fromJSON: Array(text.utf8))))
    } catch {
      return .failure(invalidArgs(error.description))
    }
  }

  /// A call's arguments, read by position; a missing or mistyped one is nil. A variant holding
  /// the type is read as the type (`DBusValue.unwrapped`).
  private struct Arguments {
    let values: [DBusValue]
    init(_ values: [DBusValue]) { self.values = values }
    func string(_ i: Int) -> String? { i < values.count ? values[i].string : nil }
    func int(_ i: Int) -> Int? { i < values.count ? values[i].int : nil }

    /// A trip ID argument, built once by its validated type; `signature` when it is no string.
    func tripID(_ i: Int, _ signature: String) -> Result<TripID, DBusError> {
      guard let text = string(i) else { return .failure(invalidArgs(signature)) }
      do throws(IdentifierError) { return .success(try TripID(text)) } catch {
        return .failure(invalidArgs(error.description))
      }
    }

    /// A device ID argument, built once by its validated type; `signature` when it is no string.
    func deviceID(_ i: Int, _ signature: String) -> Result<DeviceID, DBusError> {
      guard let text = string(i) else { return .failure(invalidArgs(signature)) }
      do throws(IdentifierError) { return .success(try DeviceID(text)) } catch {
        return .failure(invalidArgs(error.description))
      }
    }
  }
}
