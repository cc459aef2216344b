import BeaconCore
import BeaconCrypto
import BridgeDaemon
import Foundation

/// `beaconbridge pair`: binds a beacon identity to a device ID.
public struct PairCommand: BridgeCommand {
  public static let name = "pair"
  public static let abstract = "Pair a beacon with a device ID: by iBeacon identity, nearest, or by key."
  public static let usage = """
    beaconbridge pair --uuid UUID [--major M] [--minor N] --device-id ID [--label TEXT] [--state-dir DIR] [--json]
           beaconbridge pair --nearest [--wait S] [--backend bluez|hci] [--adapter hciN] --device-id ID [--label TEXT]
           beaconbridge pair --eid-key-file FILE --rotation-exponent K --beacon-clock N --device-id ID [--label TEXT] [--state-dir DIR] [--json]
           beaconbridge pair --irk-file FILE --device-id ID [--label TEXT] [--state-dir DIR] [--json]
    """
  public static let discussion = """
    The device ID is what the backend knows the vehicle by: the unit serial number or driver tag.
    Leave out --minor (or --major and --minor) to pair every beacon of that UUID and major (or
    UUID). The most specific pairing wins. Pairing the same identity again replaces it.
    With [Fleet] configured, the fleet's desired document owns the pairings and pair refuses
    (docs/fleet.md).

    OPTIONS:
      --uuid UUID      The iBeacon proximity UUID, e.g. E2C56DB5-DFFB-48D2-B060-D0F5A71096E0.
      --major M        0 to 65535.
      --minor N        0 to 65535 (needs --major).
      --device-id ID   The device ID trips are tagged with: 1 to 128 bytes of printable text,
                       no control characters, no space at either end.
      --label TEXT     A name for people, e.g. "van 7" (the device ID's text rule).
      --nearest        Pair the strongest beacon in range instead: listens for --wait seconds
                       (default 10; through the daemon when it runs, else by scanning with
                       --backend/--adapter), shows which beacon it chose and why, and refuses
                       when two beacons are too close to call (within 3 dB).
      --eid-key-file FILE  Pair an Eddystone-EID beacon by its identity key: FILE holds 32 hex
                       digits and follows the token-file rule (a regular file others cannot
                       read). Its identity cannot be cloned (docs/authentication.md).
      --rotation-exponent K  The beacon's K (its EID changes every 2^K s), 0 to 15.
      --beacon-clock N The beacon's 32-bit time counter now, as its provisioning tool reports
                       it; the pairing keeps its offset to this box's clock.
      --irk-file FILE  Pair a device by its identity resolving key (resolvable private
                       addresses): FILE as for --eid-key-file.
                       A key is never printed, listed or logged. With the daemon running, a
                       pairing by key goes through its PairWithKey method (root only).
    \(StoreOptions.help)
      --json           Print the pairing as JSON.
    """

  public var pairing: Pairing
  var store: StoreOptions
  var json: Bool
  /// A pairing by key: the scheme, the key file, and for EID, K and the beacon's clock now.
  var byKey: (scheme: KeyedIdentity.Scheme, file: String, rotationExponent: UInt8?, beaconClock: UInt32?)?
  /// `--nearest`: how long to listen, and with what.
  var nearest: (wait: Double, backend: ScanBackend, adapter: HCIDeviceID?)?

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    store = try StoreOptions(&arguments)
    let eidFile = try arguments.option("--eid-key-file")
    let irkFile = try arguments.option("--irk-file")
    if eidFile != nil || irkFile != nil {
      guard eidFile == nil || irkFile == nil else {
        throw UsageError("give --eid-key-file or --irk-file, not both")
      }
      let k = try arguments.number("--rotation-exponent", in: 0...15)
      let clock = try arguments.number("--beacon-clock", in: 0...Double(UInt32.max))
      if let eidFile {
        guard let k else { throw UsageError("--eid-key-file needs --rotation-exponent K (0 to 15)") }
        guard k == k.rounded() else {
          throw UsageError("--rotation-exponent must be a whole number from 0 to 15, not \(Self.shown(k))")
        }
        guard let clock else {
          throw UsageError("--eid-key-file needs --beacon-clock N (the beacon's clock now, 0 to 4294967295)")
        }
        guard clock == clock.rounded() else {
          throw UsageError(
            "--beacon-clock must be a whole number from 0 to 4294967295 (the beacon's clock now), not \(Self.shown(clock))"
          )
        }
        byKey = (.eid, eidFile, UInt8(k), UInt32(clock))
      } else {
        guard k == nil, clock == nil else {
          throw UsageError("--rotation-exponent and --beacon-clock are for --eid-key-file")
        }
        byKey = (.rpa, irkFile ?? "", nil, nil)
      }
      guard let deviceId = try arguments.option("--device-id", as: DeviceID.self) else {
        throw UsageError("pair needs --device-id")
      }
      let scheme = byKey?.scheme ?? .rpa
      pairing = Pairing(
        key: KeyedIdentity(scheme: scheme, pairing: 0), deviceId: deviceId, label: try Self.label(&arguments))
      return
    }
    if arguments.flag("--nearest") {
      for name in ["--uuid", "--major", "--minor"] where arguments.present(name) {
        throw UsageError("\(name) cannot be used with --nearest, which pairs the beacon it hears")
      }
      let wait = try arguments.number("--wait", in: 1...600) ?? 10
      let backendText = try arguments.option("--backend") ?? "bluez"
      guard let backend = ScanBackend(rawValue: backendText) else {
        throw UsageError("--backend must be bluez or hci, not \(backendText.quotedForMessage)")
      }
      let adapter = try arguments.option("--adapter", as: HCIDeviceID.self)
      guard let deviceId = try arguments.option("--device-id", as: DeviceID.self) else {
        throw UsageError("pair needs --device-id")
      }
      nearest = (wait, backend, adapter)
      // A placeholder identity until the scan picks one.
      pairing = Pairing(
        uuid: UUID(), major: 0, minor: 0, deviceId: deviceId, label: try Self.label(&arguments))
      return
    }
    for name in ["--wait", "--backend", "--adapter"] where arguments.present(name) {
      throw UsageError("\(name) needs --nearest")
    }
    guard let uuidText = try arguments.option("--uuid") else { throw UsageError("pair needs --uuid") }
    let majorText = try arguments.option("--major")
    let minorText = try arguments.option("--minor")
    let identity: PairingIdentity
    do { identity = try PairingIdentity(uuid: uuidText, major: majorText, minor: minorText) } catch {
      throw UsageError("\(error.field == "UUID" ? "--uuid" : "--\(error.field)"): \(error.description)")
    }
    guard let deviceId = try arguments.option("--device-id", as: DeviceID.self) else {
      throw UsageError("pair needs --device-id")
    }
    pairing = Pairing(identity: identity, deviceId: deviceId, label: try Self.label(&arguments))
  }

  /// A number as it was given, for a message ("1.5").
  static func shown(_ value: Double) -> String { "\(value)" }

  /// `--label TEXT`, checked by the label rule.
  static func label(_ arguments: inout Arguments) throws(UsageError) -> String? {
    guard let text = try arguments.option("--label") else { return nil }
    do { try PairingLabel.check(text) } catch { throw UsageError("--label: \(error.description)") }
    return text
  }

  public func run(_ console: any Console) async -> Int32 {
    if let byKey { return await pairByKey(byKey, console) }
    var pairing = self.pairing
    if let nearest {
      guard
        let chosen = await NearestBeacon.choose(
          wait: nearest.wait, backend: nearest.backend, adapter: nearest.adapter, console: console)
      else { return ExitStatus.failure }
      pairing = Pairing(
        uuid: chosen.uuid, major: chosen.major, minor: chosen.minor, deviceId: pairing.deviceId,
        label: pairing.label)
    }
    // Through the daemon when it runs (it owns the store's files), else the store directly.
    do {
      _ = try await DaemonClient.call(
        BridgeServiceNames.Method.pair,
        [
          .string(pairing.uuid.uuidString), .int32(pairing.major.map { Int32($0) } ?? -1),
          .int32(pairing.minor.map { Int32($0) } ?? -1), .string(pairing.deviceId.rawValue),
          .string(pairing.label ?? ""),
        ])
    } catch  where error.notRunning {
      guard await store.write(console, { try await $0.pair(pairing) }) != nil else {
        return ExitStatus.failure
      }
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return ExitStatus.failure
    }
    if json {
      console.out(pairing.json.compactText + "\n")
    } else {
      console.out(
        "Paired \(pairing.pattern) with \(pairing.deviceId)\(pairing.label.map { " (\($0))" } ?? "").\n")
    }
    return ExitStatus.success
  }
}

extension PairCommand {
  /// A pairing by key: the key file read by the token-file rule into a buffer wiped once the
  /// key is stored; through the daemon's PairWithKey when it runs, else into the store.
  func pairByKey(
    _ byKey: (scheme: KeyedIdentity.Scheme, file: String, rotationExponent: UInt8?, beaconClock: UInt32?),
    _ console: any Console
  ) async -> Int32 {
    var digits: [UInt8]
    do { digits = try PairingKeyFile.digits(byKey.file) } catch {
      console.err("beaconbridge: pair: \(error.description)\n")
      return ExitStatus.failure
    }
    defer { digits.withUnsafeMutableBytes { SecretBytes.wipe($0) } }
    let label = pairing.label
    let deviceId = pairing.deviceId
    guard
      let stored = await Self.storeByKey(
        scheme: byKey.scheme, digits: digits, rotationExponent: byKey.rotationExponent,
        beaconClock: byKey.beaconClock, pairing: pairing, store: store, console: console)
    else { return ExitStatus.failure }
    let done = stored
    if json {
      console.out(done.json.compactText + "\n")
    } else {
      let what = byKey.scheme == .eid ? "an Eddystone-EID key" : "an IRK"
      console.out("Paired \(what) with \(deviceId)\(label.map { " (\($0))" } ?? "").\n")
    }
    return ExitStatus.success
  }
}

extension PairCommand {
  /// Stores a pairing by key: through the daemon's PairWithKey when it runs, else into the store
  /// under its lock. `digits` is the key's 32 hex digits, which the caller wipes; `pairing`
  /// carries the device ID and label. The pairing as stored, or nil having said why.
  static func storeByKey(
    scheme: KeyedIdentity.Scheme, digits: [UInt8], rotationExponent: UInt8?, beaconClock: UInt32?,
    pairing: Pairing, store: StoreOptions, console: any Console
  ) async -> Pairing? {
    let label = pairing.label
    let deviceId = pairing.deviceId
    do {
      let reply = try await DaemonClient.call(
        BridgeServiceNames.Method.pairWithKey,
        [
          .string(scheme.rawValue), .string(String(decoding: digits, as: UTF8.self)),
          .int32(rotationExponent.map { Int32($0) } ?? -1),
          .int64(beaconClock.map { Int64($0) } ?? -1),
          .string(deviceId.rawValue), .string(label ?? ""),
        ])
      // The reply is the stored pairing (`ReportedPairing`), with the number the store gave it.
      let reported = reply.first?.string.flatMap { try? JSONValue.parse(Data($0.utf8)) }.flatMap {
        try? ReportedPairing(json: $0, path: "")
      }
      return reported?.pairing.key == nil ? pairing : reported?.pairing
    } catch  where error.notRunning {
      let offset = beaconClock.map { Int64($0) - Int64(Date().timeIntervalSince1970.rounded(.down)) }
      let tolerance = configuredEIDClockTolerance
      let result = await store.write(console) {
        try await $0.pairByKey(
          scheme: scheme, key: digits, rotationExponent: rotationExponent, clockOffset: offset,
          deviceId: deviceId, label: label, eidClockTolerance: tolerance)
      }
      return result?.pairing
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return nil
    }
  }

  /// The tolerance a daemon starts with: the configuration file's (a file that does not read
  /// stops the daemon's start anyway, which checks the cold search's limit again).
  static var configuredEIDClockTolerance: Double {
    (try? DaemonConfiguration.load(path: nil))?.bridge.eidClockTolerance
      ?? BridgeConfiguration().eidClockTolerance
  }

  /// The refusal (`ColdSearchLimit`) of one more EID pairing at `k` beside the store's, asked
  /// before `provision` registers a beacon, so that a pairing the store would refuse leaves no
  /// beacon registered; the store refuses it again when the pairing is stored. A store that is
  /// not there yet holds none, and nothing is created.
  static func coldSearchRefusal(adding k: UInt8, store: StoreOptions) async -> String? {
    var exponents: [UInt8] = []
    if let opened = try? Store(readingOnly: store.directory), let stored = try? await opened.keyPairings() {
      exponents = stored.compactMap(\.rotationExponent)
    }
    return ColdSearchLimit.refusal(
      eidClockTolerance: configuredEIDClockTolerance, rotationExponents: exponents + [k])
  }
}
