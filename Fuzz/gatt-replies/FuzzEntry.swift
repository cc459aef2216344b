// libFuzzer entry for the replies the EID provisioner reads over GATT (EIDProvisioning's
// ConfigService: capabilities, lock state, challenge, active slot, public key, slot data), over
// any bytes, and for the provisioning machine fed those replies in turn. Linked by
// Fuzz/run.sh against the EIDProvisioning module (over BeaconCrypto and nettle).
import BeaconCrypto
import EIDProvisioning

/// Fixed keys: the harness looks for crashes and broken invariants, not for keys.
nonisolated(unsafe) let lockKey = try! AES128Key(hex: "00112233445566778899aabbccddeeff")
nonisolated(unsafe) let resolver = X25519PrivateKey(bytes: [UInt8](repeating: 0x42, count: 32))!

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGATTReplies(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
  // Every reader over the whole input.
  if let c = try? ConfigService.Capabilities(bytes) {
    precondition(
      bytes.count >= 7 && c.txPowers.count == bytes.count - 6, "capabilities read past their bytes")
  }
  if (try? ConfigService.LockState(bytes)) != nil { precondition(bytes.count == 1 && bytes[0] <= 2) }
  if let c = try? ConfigService.challenge(bytes) { precondition(c == bytes && c.count == 16) }
  if (try? ConfigService.activeSlot(bytes)) != nil { precondition(bytes.count == 1) }
  if let k = try? ConfigService.publicKey(bytes) { precondition(k.count == 32) }
  if case .eid(let k, _, _)? = try? ConfigService.SlotData(bytes) {
    precondition(bytes.count == 14 && k <= 15, "an EID slot of \(bytes.count) bytes")
  }
  // The machine, fed replies cut from the input: a length byte, then that many bytes (a length
  // of 0xFF is a GATT error chosen by the next byte). Every write succeeds.
  var machine = ProvisioningMachine(lockKey: lockKey, method: .keyExchange(resolver), rotationExponent: 10)
  var action = machine.start()
  var offset = 0
  var steps = 0
  let errors: [GATTError] = [
    .readNotPermitted, .writeNotPermitted, .invalidAttributeLength, .timeout, .disconnected, .attribute(0x80),
  ]
  while true {
    steps += 1
    precondition(steps < 2_000, "the machine did not end")
    switch action {
    case .finished(let registration):
      let k = RotationExponent(rawValue: registration.rotationExponent)!
      precondition(
        EddystoneEID.eid(
          identityKey: registration.identityKey, rotationExponent: k, clock: registration.beaconClock)
          == registration.eid, "a registration whose EID is not its key's")
      return 0
    case .failed(let error):
      precondition(!error.description.isEmpty)
      return 0
    case .write:
      action = machine.handle(.success([]))
    case .read:
      guard offset < bytes.count else {
        action = machine.handle(.failure(.disconnected))
        continue
      }
      let length = Int(bytes[offset])
      offset += 1
      if length == 0xFF {
        let which = offset < bytes.count ? Int(bytes[offset]) % errors.count : 0
        offset += 1
        action = machine.handle(.failure(errors[which]))
        continue
      }
      let end = min(bytes.count, offset + length)
      action = machine.handle(.success(Array(bytes[offset..<end])))
      offset = end
    }
  }
}
