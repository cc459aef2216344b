// The bounded search for an EID not in the table: every window within the clock tolerance of a
// pairing's expected clock, from the expected one outward, and what it may cost.
extension EIDResolver {
  /// The most AES operations (block encryptions and key expansions) one pairing costs a search:
  /// at most ⌊2T / 2^K⌋ + 2 windows, one block each, and at most ⌊2T / 65,536⌋ + 2 temporary
  /// keys, one block and one key expansion each. A search over N pairings costs at most N times
  /// this (twice that for a pairing whose clock stepped and was not heard since). T = 86,400 s,
  /// K = 10: 170 + 2 × 4 = 178.
  public static func searchOperations(tolerance: Int64, rotationExponent k: RotationExponent) -> Int64 {
    let span = 2 * max(0, tolerance)
    return (span >> Int64(k.rawValue)) + 2 + 2 * (span / EddystoneEID.temporaryKeySeconds + 2)
  }

  /// The most AES operations one whole-tolerance search costs over pairings of these rotation
  /// exponents: the sum of `searchOperations(tolerance:rotationExponent:)` over them, the cost of
  /// a cold search for an EID none of them sent (docs/authentication.md, "The time a cold search
  /// may take"). T = 86,400 s, one pairing at K = 0 and one at K = 10: 172,810 + 178.
  public static func searchOperations(
    tolerance: Int64, rotationExponents: some Sequence<RotationExponent>
  ) -> Int64 {
    rotationExponents.reduce(0) { $0 + searchOperations(tolerance: tolerance, rotationExponent: $1) }
  }

  /// The window of `slot`'s beacon whose EID this is, within the tolerance; nil if none. From the
  /// expected window outward, so a beacon that drifted a little is found first.
  mutating func search(eid: UInt64, slot index: Int, at t: Int64) -> Int64? {
    if let window = search(eid: eid, slot: index, at: t, offset: clocks[index].offset) { return window }
    // After a step of the box's clock, the offset as it was before (`clockStepped(by:)`).
    guard let unmoved = clocks[index].unmovedOffset,
      let window = search(eid: eid, slot: index, at: t, offset: unmoved)
    else { return nil }
    clocks[index].offset = unmoved
    return window
  }

  private mutating func search(eid: UInt64, slot index: Int, at t: Int64, offset: Int64) -> Int64? {
    guard let slot = slots[index] else { return nil }
    let k = clocks[index].k
    let expected = Self.expected(t, offset)
    let low = max(0, expected - configuration.tolerance)
    let high = min(Self.maxClock, expected + configuration.tolerance)
    guard low <= high else { return nil }
    let first = low >> k
    let last = high >> k
    let center = min(max(expected, 0), Self.maxClock) >> k
    var keys: [Int64: AES128Key] = slot.temporaryKeys
    var step: Int64 = 0
    while true {
      let above = center + step
      let below = center - step - 1
      let aboveIn = above <= last
      let belowIn = below >= first
      if !aboveIn && !belowIn { break }
      for side in 0..<2 {
        let window = side == 0 ? above : below
        guard window >= first && window <= last else { continue }
        if compute(window: window, k: k, slot: slot, keys: &keys) == eid {
          // Kept for the table's refresh in `accept`, which drops those it does not need.
          slots[index]?.temporaryKeys = keys
          return window
        }
      }
      step += 1
    }
    return nil
  }

  /// The EID of a window, with the temporary key from `keys` or computed into it.
  mutating func compute(
    window: Int64, k: Int64, slot: Slot, keys: inout [Int64: AES128Key]
  ) -> UInt64 {
    let clock = UInt32(window << k)
    let keyIndex = Int64(clock >> 16)
    let temporaryKey: AES128Key
    if let cached = keys[keyIndex] {
      temporaryKey = cached
    } else {
      temporaryKey = EddystoneEID.temporaryKey(identityKey: slot.pairing.identityKey, clock: clock)
      statistics.blockEncryptions += 1
      statistics.keyExpansions += 1
      keys[keyIndex] = temporaryKey
    }
    statistics.blockEncryptions += 1
    return EddystoneEID.eid(
      temporaryKey: temporaryKey, rotationExponent: slot.pairing.rotationExponent, clock: clock)
  }
}
