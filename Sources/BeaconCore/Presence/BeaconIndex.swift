/// Where each tracked beacon's entry is, in a table of our own keyed by a 64-bit identity key
/// (`BeaconID.indexKey`): presence looks a beacon up on every sighting, and a `Dictionary` keyed
/// by `BeaconID` ran Swift's `Hasher` (SipHash) for each, about 400 instructions of the roughly
/// 1,700 that parse + track cost (callgrind).
///
/// Open addressing with linear probing, at most half full, so that a lookup is one or two probes.
/// A slot holds an entry's index and the key it was stored under; a key is only a hint, never the
/// identity: every hit is confirmed by the caller (`matches`), so two identities whose keys
/// collide are both found. Removal shifts the following slots back (no tombstones), so probe
/// lengths do not grow with churn.
///
/// The keys mix a per-process seed (from `Hasher`, so `SWIFT_DETERMINISTIC_HASHING` makes it
/// fixed for the instruction benchmarks), so that identities chosen to collide in one process
/// do not collide in another.
package struct BeaconIndex: Sendable {
  /// Entry index + 1 per slot; 0 is empty.
  @usableFromInline var slots: [Int32]
  /// The key each occupied slot was stored under.
  @usableFromInline var keys: [UInt64]
  @usableFromInline var mask: Int
  package private(set) var count = 0
  /// The seed `BeaconID.indexKey` mixes in.
  package let seed: UInt64

  package init(capacity: Int = 64) {
    var hasher = Hasher()
    hasher.combine(0x6265_6163_6f6e as UInt64)
    self.init(capacity: capacity, seed: UInt64(truncatingIfNeeded: hasher.finalize()))
  }

  private init(capacity: Int, seed: UInt64) {
    var size = 16
    while size < capacity * 2 { size *= 2 }
    slots = Array(repeating: 0, count: size)
    keys = Array(repeating: 0, count: size)
    mask = size - 1
    self.seed = seed
  }

  /// The number of slots.
  package var capacity: Int { slots.count }

  /// A table of the same seed holding entry `i` under `keys[i]`, sized for them (at least the
  /// initial 64).
  package func rebuilt(_ keys: [UInt64]) -> BeaconIndex {
    var table = BeaconIndex(capacity: max(64, keys.count), seed: seed)
    for (index, key) in keys.enumerated() { table.insert(key, index: index) }
    return table
  }

  @inlinable @inline(__always) func home(_ key: UInt64) -> Int { Int(truncatingIfNeeded: key) & mask }

  /// The entry index stored under `key` for which `matches` holds, or nil.
  ///
  /// Inlinable, so that a caller in another module (BlueZ's device mirror looks a device up for
  /// every signal) gets it inlined with its `matches` closure rather than a call and a closure
  /// call per lookup.
  @inlinable @inline(__always)
  package func find(_ key: UInt64, matches: (Int) -> Bool) -> Int? {
    slots.withUnsafeBufferPointer { slots in
      keys.withUnsafeBufferPointer { keys in
        // At most half full, so an empty slot ends every probe; the positions are masked, so
        // always in the buffers (both `mask + 1` long).
        var position = home(key)
        while true {
          let stored = slots[position]
          if stored == 0 { return nil }
          if keys[position] == key, matches(Int(stored) - 1) { return Int(stored) - 1 }
          position = (position + 1) & mask
        }
      }
    }
  }

  /// The slot holding entry `index` (stored under `key`); it must be there.
  private func slot(of index: Int, key: UInt64) -> Int {
    var position = home(key)
    while Int(slots[position]) - 1 != index {
      precondition(slots[position] != 0, "BeaconIndex: entry \(index) is not indexed")
      position = (position + 1) & mask
    }
    return position
  }

  /// Stores entry `index` under `key` (not there yet).
  package mutating func insert(_ key: UInt64, index: Int) {
    if (count + 1) * 2 > slots.count { grow() }
    var position = home(key)
    while slots[position] != 0 { position = (position + 1) & mask }
    slots[position] = Int32(index + 1)
    keys[position] = key
    count += 1
  }

  /// Entry `index`, stored under `key`, now lives at `newIndex`.
  package mutating func move(_ key: UInt64, from index: Int, to newIndex: Int) {
    slots[slot(of: index, key: key)] = Int32(newIndex + 1)
  }

  /// Forgets entry `index`, stored under `key`.
  package mutating func remove(_ key: UInt64, index: Int) {
    var hole = slot(of: index, key: key)
    slots[hole] = 0
    count -= 1
    // Shift back every following slot of the run whose home is not between the hole and it.
    var position = (hole + 1) & mask
    while slots[position] != 0 {
      let wanted = home(keys[position])
      // Whether `wanted` lies cyclically in (hole, position]: then the slot stays.
      let stays =
        hole <= position ? (hole < wanted && wanted <= position) : (hole < wanted || wanted <= position)
      if !stays {
        slots[hole] = slots[position]
        keys[hole] = keys[position]
        slots[position] = 0
        hole = position
      }
      position = (position + 1) & mask
    }
  }

  private mutating func grow() {
    let oldSlots = slots
    let oldKeys = keys
    slots = Array(repeating: 0, count: oldSlots.count * 2)
    keys = Array(repeating: 0, count: oldSlots.count * 2)
    mask = slots.count - 1
    for position in oldSlots.indices where oldSlots[position] != 0 {
      var target = home(oldKeys[position])
      while slots[target] != 0 { target = (target + 1) & mask }
      slots[target] = oldSlots[position]
      keys[target] = oldKeys[position]
    }
  }
}

extension BeaconID {
  /// The 64-bit key `BeaconIndex` files this identity under, with `seed` mixed in: a few
  /// multiplications (wyhash's folded 128-bit product), no `Hasher`. Equal identities have equal
  /// keys; unequal ones almost never do, and when they do the index still tells them apart.
  @inline(__always)
  func indexKey(seed: UInt64) -> UInt64 {
    switch self {
    case .iBeacon(let identity): return identity.indexKey(seed: seed, kind: 1)
    case .altBeacon(let identity): return identity.indexKey(seed: seed, kind: 2)
    case .keyed(let k):
      let scheme: UInt64 = k.scheme == .eid ? 4 : 5
      return IndexKeyMix.fold(seed ^ IndexKeyMix.p0 ^ scheme, UInt64(bitPattern: k.pairing) ^ IndexKeyMix.p1)
    case .eddystone(let namespace, let instance):
      func absorb(_ key: UInt64, _ bytes: [UInt8]) -> UInt64 {
        var key = key
        var word: UInt64 = 0
        for (i, byte) in bytes.enumerated() {
          word = word << 8 | UInt64(byte)
          if i % 8 == 7 {
            key = IndexKeyMix.fold(key ^ word, IndexKeyMix.p1)
            word = 0
          }
        }
        return IndexKeyMix.fold(key ^ word, IndexKeyMix.p2)
      }
      let start = IndexKeyMix.fold(
        seed ^ IndexKeyMix.p0 ^ 3, UInt64(namespace.count) << 32 | UInt64(instance.count) | 1)
      let key = absorb(absorb(start, namespace), instance)
      return key
    }
  }
}

extension BeaconIdentity {
  @inline(__always)
  func indexKey(seed: UInt64, kind: UInt64) -> UInt64 {
    let rest = UInt64(major) << 16 | UInt64(minor) | kind << 32
    let a = IndexKeyMix.fold(uuidLow ^ seed ^ IndexKeyMix.p0, uuidHigh ^ IndexKeyMix.p1)
    return IndexKeyMix.fold(a ^ rest, seed ^ IndexKeyMix.p2)
  }
}

package enum IndexKeyMix {
  package static var p0: UInt64 { 0xa076_1d64_78bd_642f }
  package static var p1: UInt64 { 0xe703_7ed1_a0b4_28db }
  package static var p2: UInt64 { 0x8ebc_6af0_9c88_c6e3 }

  /// The high and low halves of the full product, xored (wyhash's `mum`).
  @inline(__always)
  package static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let product = a.multipliedFullWidth(by: b)
    return product.high ^ product.low
  }
}
