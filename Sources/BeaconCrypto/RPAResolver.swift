/// What the RPA resolver did. Counts only grow.
public struct RPAResolverStatistics: Equatable, Sendable {
  public var lookups = 0
  /// Addresses whose top bits are not 01: not tried.
  public var notResolvable = 0
  public var cacheHits = 0
  public var resolved = 0
  /// AES-128 blocks: one per IRK pairing for each address not in the cache.
  public var blockEncryptions = 0
}

/// Resolves resolvable private addresses to IRK pairings by `ah` (Core Vol 3 Part H 2.2.2).
///
/// Every address tried is cached with its answer (a pairing, or none), so an address costs one
/// AES block per IRK pairing once and a dictionary lookup after that. The cache holds at most
/// `capacity` addresses, the oldest forgotten first; phones nearby rotate their own RPAs every
/// few minutes, so the bound matters. Adding or removing a pairing empties it.
public struct RPAResolver: Sendable {
  public let capacity: Int
  public private(set) var statistics = RPAResolverStatistics()
  private var pairings: [(id: KeyPairingID, irk: AES128Key)] = []
  /// Address -> index into `pairings`, or -1 for none.
  private var cache: [UInt64: Int] = [:]
  private var order: [UInt64] = []
  private var next = 0

  public init(capacity: Int = 4_096) { self.capacity = max(1, capacity) }

  public var pairingIDs: [KeyPairingID] { pairings.map(\.id) }
  public var cacheCount: Int { cache.count }

  /// Adds an IRK pairing, or replaces the one with its identifier.
  public mutating func add(id: KeyPairingID, irk: AES128Key) {
    pairings.removeAll { $0.id == id }
    pairings.append((id, irk))
    clearCache()
  }

  public mutating func remove(id: KeyPairingID) {
    pairings.removeAll { $0.id == id }
    clearCache()
  }

  /// The pairing whose IRK made this 48-bit address (most significant byte first, as printed),
  /// or nil: an address that is not an RPA, or that no IRK made.
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
