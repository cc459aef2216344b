import BeaconCrypto

/// The registration of one Eddystone-EID beacon over the Eddystone Configuration Service, as a
/// pure state machine: it says which characteristic to read or write next, and is handed each
/// result. No I/O and no clock; `Provisioner` drives it over a `GATTTransport`.
///
/// The steps (google/eddystone configuration-service/README.md, eddystone-eid/eid-computation.md):
/// read the lock state; if locked, read the challenge and write AES-128-ECB(lock key, challenge),
/// then read the lock state again (a beacon may take a wrong token silently); read the
/// capabilities (readable only unlocked) and check EID is supported; choose a slot (one already
/// EID, else the first empty one, else the only one) through the active slot; write the
/// registration (34 bytes: 0x30, the box's X25519 public key, K; or, only when asked, the less
/// secure 18 bytes: 0x30, the identity key encrypted with the lock key, K); read the beacon's
/// public key and derive the identity key; read the slot back (0x30, K, the beacon's clock, its
/// EID) and check the EID computed from the derived key is the beacon's; relock.
public struct ProvisioningMachine {
  /// How the identity key is agreed.
  public enum Method {
    /// The spec's preferred method: the box's key pair, per registration (docs/authentication.md).
    case keyExchange(X25519PrivateKey)
    /// The identity key chosen by the box, sent encrypted with the lock key: less secure, since
    /// anyone who learns the lock key learns the identity key from a capture.
    case sharedKey(identityKey: IdentityKeyBytes, encryptedWithLockKey: [UInt8])

    public var name: String {
      switch self {
      case .keyExchange: "key exchange"
      case .sharedKey: "shared key (less secure)"
      }
    }
  }

  /// What to do next.
  public enum Action {
    case read(ConfigService.Characteristic, ProvisioningError.Step)
    case write(ConfigService.Characteristic, [UInt8], ProvisioningError.Step)
    case finished(Registration)
    case failed(ProvisioningError)
  }

  /// A beacon registered: the identity key (never printed), its K, and what the beacon said when
  /// read back.
  public struct Registration: Sendable, CustomStringConvertible {
    /// The key's bytes, for storing the pairing; `identityKey` is them as an AES key.
    public let keyBytes: IdentityKeyBytes
    public var identityKey: AES128Key { keyBytes.key }
    public let rotationExponent: UInt8
    /// The beacon's clock when its slot was read back.
    public let beaconClock: UInt32
    public let eid: UInt64
    public let slot: UInt8
    public let method: String
    public var description: String {
      "Registration(slot \(slot), K \(rotationExponent), clock \(beaconClock), key <redacted>)"
    }
  }

  private enum State {
    case start
    case lockState
    case challenge
    case unlockWritten
    case lockStateAfterUnlock
    case capabilities
    case slotSelected(UInt8)
    case slotRead(UInt8)
    case chosenSlotSelected
    case registrationWritten
    case publicKey
    case readBack
    case relocked
    case done
  }

  private let lockKey: AES128Key
  private let method: Method
  private let rotationExponent: UInt8
  private var state = State.start
  private var capabilities: ConfigService.Capabilities?
  /// The first slot already EID and the first empty one, as the scan finds them.
  private var eidSlot: UInt8?
  private var emptySlot: UInt8?
  private var chosenSlot: UInt8 = 0
  private var identityKey: IdentityKeyBytes?
  private var registration: Registration?
  /// Unlocked by this machine, or found unlocked: a relock is owed whatever happens next.
  public private(set) var owesRelock = false

  /// K is 0 to 15 (the caller checks it).
  public init(lockKey: AES128Key, method: Method, rotationExponent: UInt8) {
    precondition(rotationExponent <= 15, "K is 0 to 15")
    self.lockKey = lockKey
    self.method = method
    self.rotationExponent = rotationExponent
  }

  /// The first action.
  public mutating func start() -> Action {
    state = .lockState
    return .read(.lockState, .readingLockState)
  }

  /// The next action, given the result of the last one (a write's success is `[]`).
  public mutating func handle(_ result: Result<[UInt8], GATTError>) -> Action {
    switch state {
    case .start, .done:
      return .failed(ProvisioningError(.connecting, "the exchange is over", fix: "start again"))
    case .lockState:
      guard case .success(let reply) = result else {
        return gattFailure(.readingLockState, .lockState, result)
      }
      let lock: ConfigService.LockState
      do { lock = try ConfigService.LockState(reply) } catch {
        return notTheService(.readingLockState, error)
      }
      if lock == .locked {
        state = .challenge
        return .read(.unlock, .unlocking)
      }
      owesRelock = true
      state = .capabilities
      return .read(.capabilities, .readingCapabilities)
    case .challenge:
      guard case .success(let reply) = result else { return gattFailure(.unlocking, .unlock, result) }
      let challenge: [UInt8]
      do { challenge = try ConfigService.challenge(reply) } catch { return notTheService(.unlocking, error) }
      state = .unlockWritten
      // A beacon given a token, right or wrong, may be unlocked by it: relock from here on.
      owesRelock = true
      return .write(.unlock, lockKey.encrypt(AESBlock(bytes: challenge)!).bytes, .unlocking)
    case .unlockWritten:
      if case .failure(.writeNotPermitted) = result {
        return wrongLockKey("refused the unlock token (Write Not Permitted)")
      }
      guard case .success = result else { return gattFailure(.unlocking, .unlock, result) }
      state = .lockStateAfterUnlock
      return .read(.lockState, .unlocking)
    case .lockStateAfterUnlock:
      guard case .success(let reply) = result else { return gattFailure(.unlocking, .lockState, result) }
      let lock: ConfigService.LockState
      do { lock = try ConfigService.LockState(reply) } catch { return notTheService(.unlocking, error) }
      guard lock != .locked else { return wrongLockKey("is still locked after the unlock token") }
      state = .capabilities
      return .read(.capabilities, .readingCapabilities)
    case .capabilities:
      guard case .success(let reply) = result else {
        return gattFailure(.readingCapabilities, .capabilities, result)
      }
      let capabilities: ConfigService.Capabilities
      do { capabilities = try ConfigService.Capabilities(reply) } catch {
        return notTheService(.readingCapabilities, error)
      }
      guard capabilities.supportsEID else {
        return .failed(
          ProvisioningError(
            .readingCapabilities,
            "the beacon does not support Eddystone-EID (its capabilities list no EID slot)",
            fix: "provision a beacon that lists EID among its frame types, or pair this one by its UUID"))
      }
      self.capabilities = capabilities
      state = .slotSelected(0)
      return .write(.activeSlot, [0], .choosingSlot)
    case .slotSelected(let slot):
      guard case .success = result else { return gattFailure(.choosingSlot, .activeSlot, result) }
      state = .slotRead(slot)
      return .read(.advSlotData, .choosingSlot)
    case .slotRead(let slot):
      guard case .success(let reply) = result else { return gattFailure(.choosingSlot, .advSlotData, result) }
      let data: ConfigService.SlotData
      do { data = try ConfigService.SlotData(reply) } catch { return notTheService(.choosingSlot, error) }
      switch data {
      case .eid: if eidSlot == nil { eidSlot = slot }
      case .empty: if emptySlot == nil { emptySlot = slot }
      case .other: break
      }
      let slots = capabilities!.maxSlots
      if eidSlot == nil, slot + 1 < slots {
        state = .slotSelected(slot + 1)
        return .write(.activeSlot, [slot + 1], .choosingSlot)
      }
      guard let chosen = eidSlot ?? emptySlot ?? (slots == 1 ? 0 : nil) else {
        return .failed(
          ProvisioningError(
            .choosingSlot,
            "every one of the beacon's \(slots) slots broadcasts another frame (UID, URL or TLM)",
            fix: "clear one slot with the beacon maker's tool, then run provision again"))
      }
      chosenSlot = chosen
      state = .chosenSlotSelected
      return .write(.activeSlot, [chosen], .choosingSlot)
    case .chosenSlotSelected:
      guard case .success = result else { return gattFailure(.choosingSlot, .activeSlot, result) }
      state = .registrationWritten
      return .write(.advSlotData, registrationBytes, .registering)
    case .registrationWritten:
      if case .failure(.invalidAttributeLength) = result {
        let fix: String
        switch method {
        case .keyExchange:
          fix =
            "the beacon does not take the 34-byte key-exchange registration; if its maker says it takes only a shared identity key, use --shared-key-file with --less-secure-shared-key"
        case .sharedKey:
          fix =
            "the beacon does not take the 18-byte shared-key registration; provision it without --shared-key-file"
        }
        return .failed(
          ProvisioningError(
            .registering, "the beacon refused the registration (Invalid Attribute Length)", fix: fix))
      }
      guard case .success = result else { return gattFailure(.registering, .advSlotData, result) }
      switch method {
      case .keyExchange:
        state = .publicKey
        return .read(.publicECDHKey, .readingPublicKey)
      case .sharedKey(let key, _):
        identityKey = key
        state = .readBack
        return .read(.advSlotData, .readingBack)
      }
    case .publicKey:
      guard case .success(let reply) = result else {
        return gattFailure(.readingPublicKey, .publicECDHKey, result)
      }
      let bytes: [UInt8]
      do { bytes = try ConfigService.publicKey(reply) } catch {
        return notTheService(.readingPublicKey, error)
      }
      guard case .keyExchange(let resolver) = method else { return .failed(internalError) }
      do {
        identityKey = try EIDKeyExchange.identityKeyBytes(
          resolver: resolver, beaconPublicKey: X25519PublicKey(bytes: bytes)!)
      } catch {
        return .failed(
          ProvisioningError(
            .derivingKey, error.description,
            fix:
              "nothing was paired; the beacon is faulty or an impostor answered: reset the beacon and run provision again"
          ))
      }
      state = .readBack
      return .read(.advSlotData, .readingBack)
    case .readBack:
      guard case .success(let reply) = result else { return gattFailure(.readingBack, .advSlotData, result) }
      let data: ConfigService.SlotData
      do { data = try ConfigService.SlotData(reply) } catch { return notTheService(.readingBack, error) }
      guard case .eid(let k, let clock, let eid) = data else {
        return .failed(
          ProvisioningError(
            .readingBack, "the slot does not read back as an EID slot after the registration",
            fix: "the beacon did not take the registration; reset it and run provision again"))
      }
      guard k == rotationExponent else {
        return .failed(
          ProvisioningError(
            .readingBack,
            "the slot reads back with rotation exponent \(k), not the \(rotationExponent) written",
            fix: "give a --rotation-exponent the beacon supports and run provision again"))
      }
      let key = identityKey!
      let computed = EddystoneEID.eid(
        identityKey: key.key, rotationExponent: RotationExponent(rawValue: k)!, clock: clock)
      guard computed == eid else {
        return .failed(
          ProvisioningError(
            .readingBack,
            "the beacon's EID does not match the one computed from the derived identity key, so the keys differ",
            fix:
              "nothing was paired; run provision again (if it repeats, the beacon derives its key differently from the spec or something between you altered the exchange)"
          ))
      }
      registration = Registration(
        keyBytes: key, rotationExponent: k, beaconClock: clock, eid: eid, slot: chosenSlot,
        method: method.name)
      state = .relocked
      return .write(.lockState, [0x00], .relocking)
    case .relocked:
      guard case .success = result else { return gattFailure(.relocking, .lockState, result) }
      owesRelock = false
      state = .done
      return .finished(registration!)
    }
  }

  /// The ADV Slot Data write for the method.
  private var registrationBytes: [UInt8] {
    switch method {
    case .keyExchange(let resolver):
      [ConfigService.eidFrameType] + resolver.publicKey.bytes + [rotationExponent]
    case .sharedKey(_, let encrypted): [ConfigService.eidFrameType] + encrypted + [rotationExponent]
    }
  }

  private var internalError: ProvisioningError {
    ProvisioningError(
      .derivingKey, "the provisioner reached a state it has no step for", fix: "report this as a bug")
  }

  private func wrongLockKey(_ what: String) -> Action {
    .failed(
      ProvisioningError(
        .unlocking, "the beacon \(what): the lock key is wrong",
        fix:
          "put this beacon's lock key (32 hex digits, as its maker or its last owner set it) in --lock-key-file"
      ))
  }

  private func notTheService(_ step: ProvisioningError.Step, _ error: ConfigService.ReplyError) -> Action {
    .failed(
      ProvisioningError(
        step, error.description,
        fix: "the beacon does not follow the Eddystone Configuration Service; nothing was paired"
      ))
  }

  /// A GATT failure as one sentence, with the fix that error calls for.
  private func gattFailure(
    _ step: ProvisioningError.Step, _ characteristic: ConfigService.Characteristic,
    _ result: Result<[UInt8], GATTError>
  ) -> Action {
    guard case .failure(let error) = result else { return .failed(internalError) }
    let fix: String
    switch error {
    case .timeout:
      fix =
        "bring the box and the beacon closer, make sure the beacon is connectable, and run provision again"
    case .disconnected:
      fix =
        "keep the beacon connectable and in range (some stay connectable only briefly after a button press) and run provision again"
    case .readNotPermitted, .writeNotPermitted:
      fix =
        "the beacon is locked or refuses this step; check the lock key and that no other app is connected, and run provision again"
    case .invalidAttributeLength:
      fix = "the beacon refused the value's length or range; check --rotation-exponent is one it supports"
    case .noCharacteristic:
      fix = "the beacon's configuration service lacks it, so it cannot be provisioned for EID"
    case .attribute, .other:
      fix =
        "run provision again; if it repeats, the beacon does not follow the Eddystone Configuration Service"
    }
    return .failed(ProvisioningError(step, "\(characteristic): \(error)", fix: fix))
  }
}
