import BeaconCrypto
import BeaconTestSupport
import EIDProvisioning
import Testing

@Suite struct ProvisioningTests {
  static let lockKeyHex = "00112233445566778899aabbccddeeff"

  func lockKey() -> AES128Key { try! AES128Key(hex: Self.lockKeyHex) }

  func provision(
    _ beacon: FakeConfigBeacon, lockKey: AES128Key? = nil, k: UInt8 = 10,
    method: ProvisioningMachine.Method? = nil
  ) async -> Result<ProvisioningMachine.Registration, ProvisioningError> {
    let machine = ProvisioningMachine(
      lockKey: lockKey ?? self.lockKey(), method: method ?? .keyExchange(X25519PrivateKey()),
      rotationExponent: k)
    return await Provisioner(timeout: .seconds(1)).run(machine, over: beacon)
  }

  func failure(_ result: Result<ProvisioningMachine.Registration, ProvisioningError>) -> ProvisioningError? {
    if case .failure(let error) = result { return error }
    return nil
  }

  /// No registration was written after a failure before it, and the beacon is locked again.
  func expectNothingRegistered(_ beacon: FakeConfigBeacon) {
    #expect(!beacon.log.contains { if case .write(.advSlotData, _) = $0 { true } else { false } })
    #expect(beacon.locked)
  }

  @Test func aBeaconIsRegisteredByKeyExchangeAndTheKeysAgree() async throws {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    let registration = try await provision(beacon).get()
    #expect(registration.slot == 0)
    #expect(registration.rotationExponent == 10)
    #expect(registration.beaconClock == 65_280)
    let beaconKey = try #require(beacon.key(slot: 0))
    #expect(sameKey(registration.identityKey, beaconKey))
    #expect(
      registration.eid
        == EddystoneEID.eid(
          identityKey: beaconKey, rotationExponent: RotationExponent(rawValue: 10)!, clock: 65_280))
    // The digits handed to the store spell the same key, and the bytes never print.
    let digits = registration.keyBytes.hexDigits()
    #expect(sameKey(try AES128Key(hex: String(decoding: digits, as: UTF8.self)), beaconKey))
    #expect("\(registration.keyBytes)" == "<redacted>")
    var dumped = ""
    dump(registration.keyBytes, to: &dumped)
    #expect(!dumped.lowercased().contains(String(decoding: digits, as: UTF8.self)))
    #expect(beacon.locked, "relocked at the end")
    #expect(beacon.log.last == .write(.lockState, [0x00]))
    // The 34-byte registration: 0x30, the box's public key, K.
    let written = beacon.log.compactMap { if case .write(.advSlotData, let v) = $0 { v } else { nil } }
    #expect(written.count == 1 && written[0].count == 34 && written[0].first == 0x30 && written[0].last == 10)
    #expect(!"\(registration)".contains(hex(written[0])))
    #expect("\(registration)".contains("<redacted>"))
  }

  @Test func theUnlockTokenIsTheChallengeEncryptedWithTheLockKey() async throws {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    let challenge = beacon.state.withLock { $0.challenge }
    _ = try await provision(beacon).get()
    let token = beacon.log.compactMap { if case .write(.unlock, let v) = $0 { v } else { nil } }
    #expect(token == [lockKey().encrypt(AESBlock(bytes: challenge)!).bytes])
  }

  @Test func aWrongLockKeyRefusedWithWriteNotPermittedPairsNothing() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    let error = failure(
      await provision(beacon, lockKey: try! AES128Key(hex: "ffeeddccbbaa99887766554433221100")))
    #expect(error?.step == .unlocking)
    #expect(error?.description.contains("the lock key is wrong") == true)
    #expect(error?.description.contains("--lock-key-file") == true)
    expectNothingRegistered(beacon)
  }

  @Test func aWrongLockKeyTakenSilentlyIsFoundByTheLockState() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.silentOnWrongKey = true
    let error = failure(
      await provision(beacon, lockKey: try! AES128Key(hex: "ffeeddccbbaa99887766554433221100")))
    #expect(error?.step == .unlocking)
    #expect(error?.description.contains("still locked") == true)
    expectNothingRegistered(beacon)
  }

  @Test func readNotPermittedOnTheCapabilitiesStopsAndRelocks() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.fail(.read, .capabilities, with: .readNotPermitted)
    let error = failure(await provision(beacon))
    #expect(error?.step == .readingCapabilities)
    #expect(error?.description.contains("Read Not Permitted") == true)
    expectNothingRegistered(beacon)
    #expect(beacon.log.last == .write(.lockState, [0x00]), "relocked after the failure")
  }

  @Test func writeNotPermittedOnTheRegistrationStops() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.fail(.write, .advSlotData, with: .writeNotPermitted)
    let error = failure(await provision(beacon))
    #expect(error?.step == .registering)
    #expect(error?.description.contains("Write Not Permitted") == true)
    #expect(beacon.locked)
    #expect(beacon.key(slot: 0) == nil)
  }

  @Test func invalidAttributeLengthOnTheRegistrationPointsAtTheSharedKeyFlag() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.fail(.write, .advSlotData, with: .invalidAttributeLength)
    let error = failure(await provision(beacon))
    #expect(error?.step == .registering)
    #expect(error?.description.contains("Invalid Attribute Length") == true)
    #expect(error?.description.contains("--less-secure-shared-key") == true)
    #expect(beacon.locked)
  }

  @Test func aTimeoutOnAnyReadNamesItsStep() async {
    let steps: [(ConfigService.Characteristic, Int, ProvisioningError.Step)] = [
      (.lockState, 0, .readingLockState), (.unlock, 0, .unlocking), (.capabilities, 0, .readingCapabilities),
      (.advSlotData, 0, .choosingSlot), (.publicECDHKey, 0, .readingPublicKey),
      // Both slots are read while choosing (one already EID would be reused), then the chosen one.
      (.advSlotData, 2, .readingBack),
    ]
    for (characteristic, n, step) in steps {
      let beacon = FakeConfigBeacon(lockKey: lockKey())
      beacon.fail(.read, characteristic, time: n, with: .timeout)
      let error = failure(await provision(beacon))
      #expect(error?.step == step, "\(characteristic)")
      #expect(error?.description.contains("no answer in time") == true)
      #expect(beacon.locked, "\(characteristic)")
    }
  }

  @Test func aDisconnectMidwayPairsNothing() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.fail(.read, .publicECDHKey, with: .disconnected)
    let error = failure(await provision(beacon))
    #expect(error?.step == .readingPublicKey)
    #expect(error?.description.contains("the beacon disconnected") == true)
  }

  @Test func aReadBackThatDoesNotMatchTheDerivedKeyPairsNothing() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.swapsSalt = true
    let error = failure(await provision(beacon))
    #expect(error?.step == .readingBack)
    #expect(error?.description.contains("does not match") == true)
    #expect(beacon.locked)
  }

  @Test func aBeaconPublicKeyOfLowOrderIsRefused() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.publicKeyReply = [UInt8](repeating: 0, count: 32)
    let error = failure(await provision(beacon))
    #expect(error?.step == .derivingKey)
    #expect(error?.description.contains("zero shared secret") == true)
    #expect(beacon.locked)
  }

  @Test func aBeaconWithoutEIDIsRefusedBeforeAnyWrite() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.capabilities = [0x00, 2, 0, 0x00, 0x00, 0x07, 0x00]
    let error = failure(await provision(beacon))
    #expect(error?.step == .readingCapabilities)
    #expect(error?.description.contains("does not support Eddystone-EID") == true)
    expectNothingRegistered(beacon)
  }

  @Test func repliesOfTheWrongLengthAreRefusedWithTheirCharacteristic() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.publicKeyReply = [UInt8](repeating: 9, count: 31)
    let error = failure(await provision(beacon))
    #expect(error?.step == .readingPublicKey)
    #expect(error?.description.contains("Public ECDH Key reply is 31 bytes") == true)
  }

  @Test func theSlotIsOneAlreadyEIDElseTheFirstEmptyElseTheOnlyOne() async throws {
    let url: [UInt8] = [0x10, 0xEC, 0x03] + Array("example".utf8)
    let uid: [UInt8] = [0x00, 0xEC] + [UInt8](repeating: 1, count: 16)
    // A URL in slot 0, nothing in 1: slot 1.
    let a = FakeConfigBeacon(lockKey: lockKey())
    a.state.withLock { $0.slots = [url, [], []] }
    #expect(try await provision(a).get().slot == 1)
    #expect(a.state.withLock { $0.slots[0] } == url, "the URL slot is left alone")
    // A single slot broadcasting a UID: that slot.
    let b = FakeConfigBeacon(lockKey: lockKey())
    b.state.withLock { $0.slots = [uid] }
    b.capabilities[1] = 1
    #expect(try await provision(b).get().slot == 0)
    // Two slots, both in use: refused with the fix.
    let c = FakeConfigBeacon(lockKey: lockKey())
    c.state.withLock { $0.slots = [uid, url] }
    let error = failure(await provision(c))
    #expect(error?.step == .choosingSlot)
    #expect(error?.description.contains("clear one slot") == true)
    #expect(c.locked)
    // Provisioned before: the same EID slot again, with the new key.
    let d = FakeConfigBeacon(lockKey: lockKey())
    d.state.withLock { $0.slots = [url, [], []] }
    _ = try await provision(d).get()
    let again = try await provision(d).get()
    #expect(again.slot == 1)
    #expect(sameKey(again.identityKey, try #require(d.key(slot: 1))))
  }

  @Test func aBeaconFoundUnlockedIsRelockedAtTheEnd() async throws {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.state.withLock { $0.locked = false }
    _ = try await provision(beacon).get()
    #expect(!beacon.log.contains(.read(.unlock)))
    #expect(beacon.locked)
  }

  @Test func aKThatReadsBackOtherwiseIsRefused() async {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    beacon.storedK = 9
    let error = failure(await provision(beacon, k: 4))
    #expect(error?.step == .readingBack)
    #expect(error?.description.contains("rotation exponent 9, not the 4 written") == true)
    #expect(beacon.locked)
  }

  @Test func theSharedKeyMethodWritesTheKeyEncryptedWithTheLockKey() async throws {
    let beacon = FakeConfigBeacon(lockKey: lockKey())
    let identityHex = "7748ef2c01a5b6c3d4e5f60718293a4b"
    let method = try Array(identityHex.utf8).withUnsafeBytes {
      try ProvisioningMachine.Method.sharedKey(hexUTF8: $0, lockKey: lockKey())
    }
    let encrypted = lockKey().encrypt(AESBlock(bytes: bytes(identityHex))!).bytes
    beacon.sharedKeys[encrypted] = try AES128Key(hex: identityHex)
    let registration = try await provision(beacon, k: 8, method: method).get()
    #expect(sameKey(registration.identityKey, try AES128Key(hex: identityHex)))
    let written = beacon.log.compactMap { if case .write(.advSlotData, let v) = $0 { v } else { nil } }
    #expect(written == [[0x30] + encrypted + [8]])
    #expect(registration.method.contains("less secure"))
    #expect(!beacon.log.contains(.read(.publicECDHKey)))
  }
}
