/// What the RPA resolver did. Counts only grow.
public struct RPAResolverStatistics: Equatable, Sendable {
  public var lookups = 0
  /// Addresses whose top bits are not 01: not tried.
  public var notResolvable = 0
  public var cacheHits = 0
  public var resolved = 0
  /// Addresses an IRK made that were refused as replays (`RPAResolution.replay`).
  public var replaysRefused = 0
  /// AES-128 blocks: one per IRK pairing for each address not in the cache.
  public var blockEncryptions = 0
}

/// What an address came to.
public enum RPAResolution: Equatable, Sendable {
  /// Made by this pairing's IRK, and fresh.
  case resolved(KeyPairingID)
  /// Made by this pairing's IRK, but not fresh: a copy of an address heard before.
  case replay(KeyPairingID, RPAReplayReason)
  /// Not a resolvable private address, or no IRK made it.
  case unknown
}

public enum RPAReplayReason: Equatable, Sendable {
  /// First resolved more than `maxAge` seconds ago: the device has rotated away from it since.
  case expired(firstHeard: Int64)
  /// A newer address of the same device has been heard since this one was first.
  case superseded(firstHeard: Int64, newestFirstHeard: Int64)
}

/// Resolves resolvable private addresses to IRK pairings by `ah` (Core Vol 3 Part H 2.2.2).
///
/// Every address tried is cached with its answer (a pairing, or none), so an address costs one
/// AES block per IRK pairing once and a dictionary lookup after that. The cache holds at most
/// `capacity` addresses, the oldest forgotten first; phones nearby rotate their own RPAs every
/// few minutes, so the bound matters. Adding or removing a pairing empties it.
///
/// An RPA carries no freshness: anyone who heard it can send it again. So each pairing keeps the
/// addresses it resolved with the time each was first heard, and an address is refused as a
/// replay once it was first heard more than `maxAge` seconds ago, or once a newer address of the
/// same device was first heard after it (docs/authentication.md, "What an RPA proves").
public struct RPAResolver: Sendable {
  /// The most IRK pairings: a random address matches one of N IRKs by chance with probability
  /// N / 2^24 (the 24-bit hash), and 167 / 2^24 ≈ 0.995e-5 keeps that at or under 1 in 100,000.
  public static let maximumPairings = 167
  /// The chance that a random address matches one of `pairings` IRKs.
  public static func falseMatchProbability(pairings: Int) -> Double { Double(max(0, pairings)) / 16_777_216 }
  /// The addresses remembered per pairing, the oldest first heard forgotten first: about ten
  /// days of a device rotating every 15 minutes.
  public static let addressesPerPairing = 1_024

  public let capacity: Int
  /// Seconds after it was first heard that an address stops proving its device.
  public private(set) var maxAge: Int64
  public private(set) var statistics = RPAResolverStatistics()
  private var pairings: [(id: KeyPairingID, irk: AES128Key)] = []
  /// Address -> index into `pairings`, or -1 for none.
  private var cache: [UInt64: Int] = [:]
  private var order: [UInt64] = []
  private var next = 0
  /// By pairing: the addresses resolved, when each was first heard, and the newest.
  private var heard: [KeyPairingID: Heard] = [:]

  struct Heard: Sendable {
    var firstHeard: [UInt64: Int64] = [:]
    var order: [UInt64] = []
    var newestFirstHeard = Int64.min
  }

  public init(capacity: Int = 4_096, maxAge: Int64 = 1_800) {
    self.capacity = max(1, capacity)
    self.maxAge = max(0, maxAge)
  }

  public var pairingIDs: [KeyPairingID] { pairings.map(\.id) }
  public var cacheCount: Int { cache.count }

  /// Adds an IRK pairing, or replaces the one with its identifier. What the resolver heard from
  /// a pairing it already had is kept.
  public mutating func add(id: KeyPairingID, irk: AES128Key) {
    pairings.removeAll { $0.id == id }
    pairings.append((id, irk))
    clearCache()
  }

  public mutating func remove(id: KeyPairingID) {
    pairings.removeAll { $0.id == id }
    heard[id] = nil
    clearCache()
  }

  /// Takes `other`'s pairings and maximum age in place: what was heard from a pairing both hold
  /// is kept; the cache is emptied only when the pairings changed.
  public mutating func reconcile(with other: RPAResolver) {
    maxAge = other.maxAge
    guard pairings.map(\.id) != other.pairings.map(\.id) else { return }
    let wanted = Set(other.pairings.map(\.id))
    for id in heard.keys where !wanted.contains(id) { heard[id] = nil }
    pairings = other.pairings
    clearCache()
  }

  /// The pairing whose IRK made this 48-bit address (most significant byte first, as printed),
  /// or nil: an address that is not an RPA, or that no IRK made. Freshness is not checked.
  public mutating func resolve(address: UInt64) -> KeyPairingID? {
    statistics.lookups += 1
    guard let rpa = ResolvablePrivateAddress(address: address) else {
      statistics.notResolvable += 1
      return nil
    }
    if let index = cache[address] {
      statistics.cacheHits += 1
      if index >= 0 { statistics.resolved += 1 }
      return index >= 0 ? pairings[index].id : nil
    }
    var found = -1
    for (index, pairing) in pairings.enumerated() {
      statistics.blockEncryptions += 1
      if rpa.isResolved(by: pairing.irk) {
        found = index
        break
      }
    }
    insert(address, found)
    if found >= 0 { statistics.resolved += 1 }
    return found >= 0 ? pairings[found].id : nil
  }

  /// `resolve(address:)` with freshness: an address heard at `seconds` (a clock that does not
  /// step, seconds) is refused as a replay when first heard more than `maxAge` ago, or before a
  /// newer address of the same device.
  public mutating func resolve(address: UInt64, atSeconds seconds: Int64) -> RPAResolution {
    guard let id = resolve(address: address) else { return .unknown }
    var book = heard[id] ?? Heard()
    defer { heard[id] = book }
    guard let first = book.firstHeard[address] else {
      if book.order.count >= Self.addressesPerPairing {
        book.firstHeard[book.order.removeFirst()] = nil
      }
      book.firstHeard[address] = seconds
      book.order.append(address)
      book.newestFirstHeard = max(book.newestFirstHeard, seconds)
      return .resolved(id)
    }
    let (age, overflow) = seconds.subtractingReportingOverflow(first)
    if overflow || age > maxAge {
      statistics.resolved -= 1
      statistics.replaysRefused += 1
      return .replay(id, .expired(firstHeard: first))
    }
    if first < book.newestFirstHeard {
      statistics.resolved -= 1
      statistics.replaysRefused += 1
      return .replay(id, .superseded(firstHeard: first, newestFirstHeard: book.newestFirstHeard))
    }
    return .resolved(id)
  }

  private mutating func insert(_ address: UInt64, _ index: Int) {
    if order.count < capacity {
      order.append(address)
    } else {
      cache[order[next]] = nil
      order[next] = address
      next = (next + 1) % capacity
    }
    cache[address] = index
  }

  private mutating func clearCache() {
    cache.removeAll(keepingCapacity: true)
    order.removeAll(keepingCapacity: true)
    next = 0
  }
}
