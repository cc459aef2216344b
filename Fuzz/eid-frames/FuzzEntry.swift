// libFuzzer entry for BeaconCrypto's readers of what a beacon sends: the Eddystone-EID frame
// (EddystoneEID.eid(fromServiceData:)) and the encrypted TLM frame (EncryptedTLM, opened with
// AES-EAX by nettle), over any bytes. Linked by Fuzz/run.sh against the BeaconCrypto module.
import BeaconCrypto

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEIDFrames(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
  if let eid = EddystoneEID.eid(fromServiceData: bytes) {
    precondition(bytes.count == 10 && EddystoneEID.bytes(of: eid) == Array(bytes[2...]), "an EID changed")
  }
  // The first 16 bytes are the key, the next 4 the clock, the next byte K; the rest is the
  // frame, also read whole as one.
  guard bytes.count >= 21, let k = RotationExponent(rawValue: bytes[20] & 0x0f),
    let key = bytes.withUnsafeBytes({ try? AES128Key(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<16])) })
  else { return 0 }
  let clock = bytes[16..<20].reduce(0 as UInt32) { $0 << 8 | UInt32($1) }
  for frame in [bytes, Array(bytes[21...])] {
    guard let tlm = try? EncryptedTLM(serviceData: frame) else { continue }
    precondition(frame.count == 18, "an encrypted TLM frame of \(frame.count) bytes")
    if let plain = tlm.open(identityKey: key, rotationExponent: k, clock: clock) {
      precondition(plain.count == 12, "an opened TLM of \(plain.count) bytes")
      // What opens is what a beacon with that key and clock sealed.
      let sealed = EncryptedTLM.seal(
        tlm: plain, identityKey: key, rotationExponent: k, clock: clock, salt: Array(frame[14..<16]))
      precondition(sealed == frame, "an opened frame that does not seal back to itself")
    }
  }
  return 0
}
