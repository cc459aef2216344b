import BeaconCrypto

/// Two AES keys are the same key when they encrypt a block alike: a key cannot be read back.
func sameKey(_ a: AES128Key, _ b: AES128Key) -> Bool {
  let probes = [AESBlock(high: 0, low: 0), AESBlock(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)]
  return probes.allSatisfy { a.encrypt($0) == b.encrypt($0) }
}
