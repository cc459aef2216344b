import BeaconCore
import BeaconCrypto
import Dispatch
import Synchronization

/// The daemon's keys (docs/authentication.md): one `KeyAuthenticator` behind a lock, shared by
/// the bridge, which resolves through it, `PairingBook`, which changes its pairings in place,
/// and `EIDSearchService`, which searches for the EIDs not in its table. The bridge never
/// searches: an EID not in the table is `.unknown` at once and queued here, and once the search
/// finds it, the beacon's next advertisement resolves from the table. So a stranger's EID costs
/// the bridge a dictionary lookup, whatever the number of pairings or the tolerance.
public final class KeyRing: BeaconAuthenticator, Sendable {
  /// EIDs waiting for a search, each once: near (around each pairing's expected window), then
  /// the whole tolerance. Past `maximumPending` in a queue, a new EID is dropped (counted), to
  /// be queued again when heard again.
  struct Pending {
    struct Entry {
      var eid: UInt64
      var boxSeconds: Int64
      var queuedAt: ContinuousClock.Instant
      var near: Bool
    }
    var near: [Entry] = []
    var far: [Entry] = []
    var queued: Set<UInt64> = []
    var dropped = 0
  }

  public static let maximumPending = 256

  let state: Mutex<KeyAuthenticator>
  let pending = Mutex(Pending())
  /// Signalled when an EID is queued: the search's thread waits on it.
  let queued = DispatchSemaphore(value: 0)

  public init(_ authenticator: KeyAuthenticator) {
    state = Mutex(authenticator)
  }

  // MARK: The bridge's side

  public var resolvesAddresses: Bool { state.withLock { $0.resolvesAddresses } }

  public func authenticate(eid: UInt64, at time: Timestamp) -> AuthenticationResult {
    let (result, searchAt) = state.withLock { $0.authenticateWithoutSearch(eid: eid, at: time) }
    if let searchAt { queue(eid, at: searchAt) }
    return result
  }

  public func authenticate(address: BluetoothAddress, at time: Timestamp) -> AuthenticationResult {
    state.withLock { $0.authenticate(address: address, at: time) }
  }

  public func openTLM(serviceData: [UInt8], of identity: KeyedIdentity, at time: Timestamp) -> [UInt8]? {
    state.withLock { $0.openTLM(serviceData: serviceData, of: identity, at: time) }
  }

  // MARK: The owner's side

  /// Whether it holds any pairing.
  public var isEmpty: Bool { state.withLock { $0.isEmpty } }

  /// Each EID pairing's tracking, by pairing number.
  public var tracking: [Int64: EIDResolver.Tracking] { state.withLock { $0.tracking } }

  /// The resolvers' counters and the searches dropped, for the tests and `status`.
  public var statistics: (eids: EIDResolverStatistics, rpas: RPAResolverStatistics, dropped: Int) {
    let (eids, rpas) = state.withLock { ($0.eids.statistics, $0.rpas.statistics) }
    return (eids, rpas, pending.withLock { $0.dropped })
  }

  /// Takes the store's pairings in place, under the lock: an EID window heard meanwhile is not
  /// lost (`KeyAuthenticator.reconcile(with:)`).
  func reconcile(with fresh: KeyAuthenticator) { state.withLock { $0.reconcile(with: fresh) } }

  /// Fills the table of the pairings already tracked (`KeyAuthenticator.primeTable(at:)`).
  func primeTable(at time: Timestamp) { state.withLock { $0.primeTable(at: time) } }

  func withAuthenticator<T>(_ body: (inout KeyAuthenticator) -> T) -> T { state.withLock { body(&$0) } }

  // MARK: The search's side

  private func queue(_ eid: UInt64, at boxSeconds: Int64) {
    let queued = pending.withLock { p -> Bool in
      guard !p.queued.contains(eid) else { return false }
      guard p.near.count < Self.maximumPending else {
        p.dropped += 1
        return false
      }
      p.queued.insert(eid)
      p.near.append(Pending.Entry(eid: eid, boxSeconds: boxSeconds, queuedAt: .now, near: true))
      return true
    }
    if queued { self.queued.signal() }
  }

  /// The next search to run, near ones first: taken from the authenticator as it stands now.
  func nextSearch() -> (EIDSearch, queuedAt: ContinuousClock.Instant)? {
    guard
      let entry = pending.withLock({ p -> Pending.Entry? in
        if !p.near.isEmpty { return p.near.removeFirst() }
        if !p.far.isEmpty { return p.far.removeFirst() }
        return nil
      })
    else { return nil }
    let search = state.withLock {
      $0.search(for: entry.eid, atBoxSeconds: entry.boxSeconds, near: entry.near)
    }
    return (search, entry.queuedAt)
  }

  /// What a search came to. A near search that found nothing goes to the far queue.
  func finish(_ search: EIDSearch, _ progress: EIDSearch.Progress, queuedAt: ContinuousClock.Instant) {
    let waited = Int64((ContinuousClock.now - queuedAt).components.seconds)
    state.withLock { $0.finish(search, progress, atBoxSeconds: search.boxSeconds &+ waited) }
    pending.withLock { p in
      if search.near, progress == .notFound, p.far.count < Self.maximumPending {
        p.far.append(
          Pending.Entry(eid: search.eid, boxSeconds: search.boxSeconds, queuedAt: queuedAt, near: false))
      } else {
        if search.near, progress == .notFound { p.dropped += 1 }
        p.queued.remove(search.eid)
      }
    }
  }
}
