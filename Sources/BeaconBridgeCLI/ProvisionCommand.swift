import BeaconCore
import BeaconCrypto
import BlueZ
import BridgeDaemon
import DBus
import EIDProvisioning
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `beaconbridge provision`: registers an Eddystone-EID beacon over the Eddystone Configuration
/// GATT Service through bluetoothd, then pairs it by the identity key both sides derived.
public struct ProvisionCommand: BridgeCommand {
  public static let name = "provision"
  public static let abstract = "Register an Eddystone-EID beacon over Bluetooth and pair it by its key."
  public static let usage = """
    beaconbridge provision --address AA:BB:CC:DD:EE:FF --lock-key-file FILE --rotation-exponent K --device-id ID [--label TEXT] [--adapter hciN] [--wait S] [--state-dir DIR] [--json]
           beaconbridge provision … --shared-key-file FILE --less-secure-shared-key
    """
  public static let discussion = """
    The box is the beacon's resolver: it connects to the beacon through bluetoothd, unlocks it
    with its lock key, writes its own X25519 public key and K into an EID slot, reads the
    beacon's public key and derives the identity key (X25519, HKDF-SHA256; google/eddystone
    eid-computation.md), reads the slot back and checks the beacon's EID is the one the key
    gives, relocks it and disconnects. Only then is the beacon paired by that key, with its
    clock (through the daemon when it runs, else into the store). Any failure pairs nothing
    and says which step failed and what to do. The key is never printed, listed or logged;
    the box's key pair is made for this registration and forgotten (docs/authentication.md).
    Root only.

    OPTIONS:
      --address A      The beacon's Bluetooth address, AA:BB:CC:DD:EE:FF. The beacon must be
                       connectable (many are only for a while after a button press).
      --lock-key-file FILE  The beacon's 16-byte lock key as 32 hex digits, in a file that
                       follows the token-file rule (a regular file others cannot read).
      --rotation-exponent K  The EID's rotation: a new EID every 2^K s, 0 to 15.
      --device-id ID   The device ID trips are tagged with (the pair command's rule).
      --label TEXT     A name for people, e.g. "van 7".
      --adapter hciN   The adapter to connect with (default: the first powered one).
      --wait S         How long to look for the beacon when bluetoothd has not heard it yet,
                       1 to 600 s (default 20).
      --shared-key-file FILE  LESS SECURE: instead of the key exchange, write this identity key
                       (32 hex digits, the token-file rule) to the beacon encrypted with the
                       lock key, for beacons that take only that; whoever has the lock key
                       and a capture of this exchange has the identity key. Needs
                       --less-secure-shared-key.
      --less-secure-shared-key  Says you accept that.
    \(StoreOptions.help)
      --json           Print the provisioning and the pairing as JSON.
    """

  var address: BluetoothAddress
  var lockKeyFile: String
  var rotationExponent: UInt8
  var pairing: Pairing
  var adapter: HCIDeviceID?
  var wait: Double
  var sharedKeyFile: String?
  var store: StoreOptions
  var json: Bool

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    let lessSecure = arguments.flag("--less-secure-shared-key")
    store = try StoreOptions(&arguments)
    guard let addressText = try arguments.option("--address") else {
      throw UsageError("provision needs --address AA:BB:CC:DD:EE:FF (the beacon's Bluetooth address)")
    }
    guard let address = BluetoothAddress(addressText), addressText.count == 17 else {
      throw UsageError(
        "--address must be a Bluetooth address such as AA:BB:CC:DD:EE:FF, not \(addressText.quotedForMessage)"
      )
    }
    self.address = address
    guard let lockKeyFile = try arguments.option("--lock-key-file") else {
      throw UsageError("provision needs --lock-key-file FILE (the beacon's lock key, 32 hex digits)")
    }
    self.lockKeyFile = lockKeyFile
    guard let k = try arguments.number("--rotation-exponent", in: 0...15) else {
      throw UsageError("provision needs --rotation-exponent K (0 to 15)")
    }
    guard k == k.rounded() else {
      throw UsageError("--rotation-exponent must be a whole number from 0 to 15, not \(PairCommand.shown(k))")
    }
    rotationExponent = UInt8(k)
    sharedKeyFile = try arguments.option("--shared-key-file")
    if sharedKeyFile != nil, !lessSecure {
      throw UsageError(
        "--shared-key-file is the less secure method (the identity key crosses the air, encrypted only with the lock key): add --less-secure-shared-key to use it, or leave it out for the key exchange"
      )
    }
    if sharedKeyFile == nil, lessSecure {
      throw UsageError("--less-secure-shared-key goes with --shared-key-file")
    }
    adapter = try arguments.option("--adapter", as: HCIDeviceID.self)
    wait = try arguments.number("--wait", in: 1...600) ?? 20
    guard let deviceId = try arguments.option("--device-id", as: DeviceID.self) else {
      throw UsageError("provision needs --device-id")
    }
    pairing = Pairing(
      key: KeyedIdentity(scheme: .eid, pairing: 0), deviceId: deviceId,
      label: try PairCommand.label(&arguments))
  }

  public func run(_ console: any Console) async -> Int32 {
    guard geteuid() == 0 else {
      console.err(
        "beaconbridge: provision: run it as root (sudo): it connects to a beacon through bluetoothd and stores a key\n"
      )
      return ExitStatus.failure
    }
    if let refusal = await PairCommand.coldSearchRefusal(adding: rotationExponent, store: store) {
      console.err("beaconbridge: provision: \(refusal); nothing was registered\n")
      return ExitStatus.failure
    }
    // The lock key, by the key-file rule; its digits are wiped once it is a key.
    let lockKey: AES128Key
    do {
      var digits = try PairingKeyFile.digits(lockKeyFile)
      defer { digits.withUnsafeMutableBytes { SecretBytes.wipe($0) } }
      lockKey = try digits.withUnsafeBytes { try AES128Key(hexUTF8: $0) }
    } catch {
      console.err("beaconbridge: provision: --lock-key-file: \(error)\n")
      return ExitStatus.failure
    }
    let method: ProvisioningMachine.Method
    if let sharedKeyFile {
      do {
        var digits = try PairingKeyFile.digits(sharedKeyFile)
        defer { digits.withUnsafeMutableBytes { SecretBytes.wipe($0) } }
        method = try digits.withUnsafeBytes {
          try ProvisioningMachine.Method.sharedKey(hexUTF8: $0, lockKey: lockKey)
        }
      } catch {
        console.err("beaconbridge: provision: --shared-key-file: \(error)\n")
        return ExitStatus.failure
      }
    } else {
      // Per registration: made here, used for this exchange, freed (and wiped) when it ends.
      method = .keyExchange(X25519PrivateKey())
    }
    let machine = ProvisioningMachine(lockKey: lockKey, method: method, rotationExponent: rotationExponent)
    let outcome: (Result<ProvisioningMachine.Registration, ProvisioningError>, ContinuousClock.Instant?)
    do throws(GATTClient.OpenError) {
      outcome = try await GATTClient.with(
        address: address.description, adapter: adapter?.name, serviceUUID: ConfigService.serviceUUID,
        discovery: .milliseconds(Int64(wait * 1000))
      ) { client in
        let transport = BlueZGATTTransport(client: client)
        let result = await Provisioner().run(machine, over: transport)
        return (result, transport.lastSlotRead)
      }
    } catch {
      console.err("beaconbridge: provision: connecting: \(error.description)\n")
      return ExitStatus.failure
    }
    let registration: ProvisioningMachine.Registration
    switch outcome.0 {
    case .failure(let error):
      console.err("beaconbridge: provision: \(error.description)\n")
      return ExitStatus.failure
    case .success(let r): registration = r
    }
    // The beacon's clock now: as read back, plus the whole seconds since.
    let elapsed = outcome.1.map { ContinuousClock.now - $0 }?.components.seconds ?? 0
    let clock = UInt32(truncatingIfNeeded: Int64(registration.beaconClock) + max(0, elapsed))
    var digits = registration.keyBytes.hexDigits()
    defer { digits.withUnsafeMutableBytes { SecretBytes.wipe($0) } }
    guard
      let stored = await PairCommand.storeByKey(
        scheme: .eid, digits: digits, rotationExponent: registration.rotationExponent, beaconClock: clock,
        pairing: pairing, store: store, console: console)
    else {
      console.err(
        "beaconbridge: provision: pairing: the beacon is registered but the box did not store its key; run provision again (it registers the beacon anew)\n"
      )
      return ExitStatus.failure
    }
    if json {
      var out = ""
      JSONWriter.writeObject(
        [
          ("address", .string(address.description)), ("slot", .int(Int64(registration.slot))),
          ("rotationExponent", .int(Int64(registration.rotationExponent))),
          ("beaconClock", .int(Int64(clock))),
          ("method", .string(registration.method)), ("pairing", stored.json),
        ], to: &out)
      console.out(out + "\n")
    } else {
      console.out(
        "Provisioned \(address) (slot \(registration.slot), K \(registration.rotationExponent), beacon clock \(clock), \(registration.method)) and paired it with \(stored.deviceId)\(stored.label.map { " (\($0))" } ?? "").\n"
      )
    }
    return ExitStatus.success
  }
}

/// The provisioner's transport over bluetoothd: GATTClient's reads and writes, BlueZ's errors
/// told apart as the provisioner needs them.
final class BlueZGATTTransport: GATTTransport, @unchecked Sendable {
  let client: GATTClient
  private let lock = NSLock()
  private var slotRead: ContinuousClock.Instant?

  init(client: GATTClient) { self.client = client }

  /// When the slot data was last read: the beacon's clock in it was its clock then.
  var lastSlotRead: ContinuousClock.Instant? { lock.withLock { slotRead } }

  func read(_ characteristic: ConfigService.Characteristic, timeout: Duration) async throws(GATTError)
    -> [UInt8]
  {
    do {
      let value = try await client.read(characteristic.uuid, timeout: timeout)
      if characteristic == .advSlotData { lock.withLock { slotRead = .now } }
      return value
    } catch { throw Self.gattError(error) }
  }

  func write(_ characteristic: ConfigService.Characteristic, _ value: [UInt8], timeout: Duration)
    async throws(GATTError)
  {
    do { try await client.write(characteristic.uuid, value, timeout: timeout) } catch {
      throw Self.gattError(error)
    }
  }

  /// BlueZ's D-Bus errors for a GATT operation (src/gatt-client.c): NotPermitted with "Read not
  /// permitted" or "Write not permitted", InvalidArguments with "Invalid Length" (or
  /// InvalidValueLength), NotConnected, or Failed with "Operation failed with ATT error: 0xNN";
  /// libdbus's NoReply on a timeout.
  static func gattError(_ error: DBusError) -> GATTError {
    let name = error.name.rawValue
    let message = error.message.lowercased()
    if error.name == .noReply || error.name == .timeout { return .timeout }
    if error.name == .disconnected || name.hasSuffix(".NotConnected") || message.contains("not connected") {
      return .disconnected
    }
    if error.name == .unknownObject { return .noCharacteristic }
    if name.hasSuffix(".NotPermitted") || name.hasSuffix(".NotAuthorized") {
      if message.contains("read not permitted") { return .readNotPermitted }
      if message.contains("write not permitted") { return .writeNotPermitted }
    }
    if name.hasSuffix(".InvalidValueLength")
      || (name.hasSuffix(".InvalidArguments") && message.contains("invalid length"))
    {
      return .invalidAttributeLength
    }
    if let range = message.range(of: "att error: 0x"),
      let code = UInt8(message[range.upperBound...].prefix(2), radix: 16)
    {
      switch code {
      case 0x02: return .readNotPermitted
      case 0x03: return .writeNotPermitted
      case 0x0D: return .invalidAttributeLength
      default: return .attribute(code)
      }
    }
    return .other(error.message.isEmpty ? name : "\(error.message) (\(name))")
  }
}
