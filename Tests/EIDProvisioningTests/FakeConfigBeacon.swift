import BeaconCrypto
import EIDProvisioning
import Synchronization

/// A beacon serving the Eddystone Configuration Service as its spec says, as a `GATTTransport`,
/// with faults to inject: the scripted side of the provisioner's tests. Its key exchange is the
/// beacon's own side (`EIDKeyExchange.identityKey(beacon:resolverPublicKey:)`).
final class FakeConfigBeacon: GATTTransport, @unchecked Sendable {
  enum Operation: Equatable, CustomStringConvertible {
    case read(ConfigService.Characteristic)
    case write(ConfigService.Characteristic, [UInt8])
    var description: String {
      switch self {
      case .read(let c): "read \(c)"
      case .write(let c, let v): "write \(c) \(v.count) bytes"
      }
    }
  }

  struct State {
    var locked = true
    var challenge: [UInt8] = (0..<16).map { UInt8($0 * 7 + 3) }
    var activeSlot: UInt8 = 0
    var slots: [[UInt8]] = [[], []]
    var slotKeys: [UInt8: AES128Key] = [:]
    var clock: UInt32 = 65_280
    var log: [Operation] = []
    /// A fault for the nth (0-based) time an operation on a characteristic happens: read or write.
    var faults: [(Operation.Kind, ConfigService.Characteristic, Int, GATTError)] = []
    var counts: [String: Int] = [:]
  }

  let lockKey: AES128Key
  let privateKey: X25519PrivateKey
  var capabilities: [UInt8] = [0x00, 2, 1, 0x00, 0x00, 0x0F, 0xEC, 0x00]
  /// A wrong unlock token leaves the beacon locked without an error (some beacons do).
  var silentOnWrongKey = false
  /// Derives its key with the public keys swapped in the salt: its EIDs are not the box's.
  var swapsSalt = false
  /// Keeps this K whatever the registration says.
  var storedK: UInt8?
  /// Answers the public key read with this instead of its own key.
  var publicKeyReply: [UInt8]?
  let state = Mutex(State())

  init(lockKey: AES128Key, privateKey: X25519PrivateKey = X25519PrivateKey()) {
    self.lockKey = lockKey
    self.privateKey = privateKey
  }

  var log: [Operation] { state.withLock { $0.log } }
  var locked: Bool { state.withLock { $0.locked } }

  func fail(
    _ kind: Operation.Kind, _ characteristic: ConfigService.Characteristic, time n: Int = 0,
    with error: GATTError
  ) {
    state.withLock { $0.faults.append((kind, characteristic, n, error)) }
  }

  /// The identity key this beacon holds for a slot.
  func key(slot: UInt8) -> AES128Key? { state.withLock { $0.slotKeys[slot] } }

  private func fault(_ kind: Operation.Kind, _ c: ConfigService.Characteristic, _ s: inout State)
    -> GATTError?
  {
    let name = "\(kind)\(c.rawValue)"
    let n = s.counts[name, default: 0]
    s.counts[name] = n + 1
    return s.faults.first { $0.0 == kind && $0.1 == c && $0.2 == n }?.3
  }

  func read(_ c: ConfigService.Characteristic, timeout: Duration) async throws(GATTError) -> [UInt8] {
    let result: Result<[UInt8], GATTError> = state.withLock { s in
      s.log.append(.read(c))
      if let error = fault(.read, c, &s) { return .failure(error) }
      if s.locked, c != .lockState, c != .unlock { return .failure(.readNotPermitted) }
      switch c {
      case .lockState: return .success([s.locked ? 0x00 : 0x01])
      case .unlock: return s.locked ? .success(s.challenge) : .failure(.readNotPermitted)
      case .capabilities: return .success(capabilities)
      case .activeSlot: return .success([s.activeSlot])
      case .publicECDHKey: return .success(publicKeyReply ?? privateKey.publicKey.bytes)
      case .advSlotData:
        let slot = s.activeSlot
        guard s.slots[Int(slot)].first == ConfigService.eidFrameType, let key = s.slotKeys[slot] else {
          return .success(s.slots[Int(slot)])
        }
        let k = s.slots[Int(slot)].last!
        let eid = EddystoneEID.eid(
          identityKey: key, rotationExponent: RotationExponent(rawValue: k)!, clock: s.clock)
        let clock = s.clock
        return .success(
          [0x30, k] + (0..<4).map { UInt8(truncatingIfNeeded: clock >> (24 - 8 * $0)) }
            + EddystoneEID.bytes(of: eid))
      }
    }
    return try result.get()
  }

  func write(_ c: ConfigService.Characteristic, _ value: [UInt8], timeout: Duration) async throws(GATTError) {
    let error: GATTError? = state.withLock { s in
      s.log.append(.write(c, value))
      if let error = fault(.write, c, &s) { return error }
      switch c {
      case .unlock:
        guard s.locked else { return .writeNotPermitted }
        let expected = lockKey.encrypt(AESBlock(bytes: s.challenge)!).bytes
        // One-time challenge.
        s.challenge = s.challenge.map { $0 &+ 1 }
        guard value == expected else { return silentOnWrongKey ? nil : .writeNotPermitted }
        s.locked = false
        return nil
      case .lockState:
        guard !s.locked else { return .writeNotPermitted }
        guard value.count == 1 || value.count == 17 else { return .invalidAttributeLength }
        if value == [0x00] { s.locked = true }
        return nil
      case .activeSlot:
        guard !s.locked else { return .writeNotPermitted }
        guard value.count == 1, Int(value[0]) < s.slots.count else { return .invalidAttributeLength }
        s.activeSlot = value[0]
        return nil
      case .advSlotData:
        guard !s.locked else { return .writeNotPermitted }
        guard value.first == 0x30 else { return .invalidAttributeLength }
        let slot = s.activeSlot
        if value.count == 34 {
          guard let resolver = X25519PublicKey(bytes: value[1..<33]), value[33] <= 15 else {
            return .invalidAttributeLength
          }
          let key: AES128Key
          if swapsSalt {
            // Salt = beacon ‖ resolver: the spec's order reversed.
            guard let k = try? EIDKeyExchange.identityKey(resolver: privateKey, beaconPublicKey: resolver)
            else {
              return .attribute(0x80)
            }
            key = k
          } else {
            guard let k = try? EIDKeyExchange.identityKey(beacon: privateKey, resolverPublicKey: resolver)
            else {
              return .attribute(0x80)
            }
            key = k
          }
          s.slotKeys[slot] = key
        } else if value.count == 18 {
          // The identity key encrypted with the lock key. The fake has no AES decryption, so it
          // knows the test's keys by their encryption (`sharedKeys`).
          guard let key = sharedKeys[value[1..<17].map { $0 }] else { return .attribute(0x80) }
          s.slotKeys[slot] = key
        } else {
          return .invalidAttributeLength
        }
        s.slots[Int(slot)] = [0x30, storedK ?? value.last!]
        return nil
      case .capabilities, .publicECDHKey:
        return .writeNotPermitted
      }
    }
    if let error { throw error }
  }

  /// For the shared-key method: the identity keys this beacon knows by their encryption under
  /// the lock key (the fake has no AES decryption).
  var sharedKeys: [[UInt8]: AES128Key] = [:]
}

extension FakeConfigBeacon.Operation {
  enum Kind { case read, write }
}
