import BeaconCore
import BeaconCrypto
import BeaconTestSupport
import Foundation
import Synchronization
import Testing

@testable import BridgeDaemon

/// `PairingBook`, the one owner of the pairings, the keys and the tracking: the tracking reaches
/// the store while the daemon runs (what a kill -9 leaves is what the next start resumes from), a
/// refresh keeps what was heard meanwhile, refreshes do not interleave, and an EID the bridge
/// does not know is searched for off its executor (`EIDSearchService`).
@Suite struct PairingBookTests {
  static func book(_ dir: String) async throws -> (PairingBook, Int64, UInt64, OracleVectors.EID) {
    let vector = try OracleVectors.firstEID()
    let store = try Store(directory: dir)
    let pairing = try await store.pairByKey(
      scheme: .eid, key: KeyPairingStoreTests.digits(vector.identityKey),
      rotationExponent: UInt8(vector.rotationExponent), clockOffset: Int64(vector.beaconClock) - 1_000,
      deviceId: DeviceID("UNIT-E1"), label: nil)
    let id = try #require(pairing.pairing.key?.pairing)
    let bridge = BeaconBridge(host: RecordingHost(), clock: TestClock())
    // Box time 1000 at the bridge's 0, and no wall clock: the beacon's clock is the vector's.
    let book = PairingBook(
      store: store, bridge: bridge, paired: PairedBeacons(), epoch: 1_000, wallClock: nil)
    try await book.refresh()
    let eid = vector.eid.reduce(0 as UInt64) { $0 << 8 | UInt64($1) }
    return (book, id, eid, vector)
  }

  /// Runs the ring's queued searches here, as `EIDSearchService` would.
  static func searchAll(_ keys: KeyRing) {
    while let (taken, queuedAt) = keys.nextSearch() {
      var search = taken
      var progress = EIDSearch.Progress.searching
      while progress == .searching { progress = search.run(operations: 1_000) }
      keys.finish(search, progress, queuedAt: queuedAt)
    }
  }

  @Test func aHeardWindowIsWrittenOnceAndAnUnchangedOneNotAgain() async throws {
    let dir = try scratchDirectory("pairing-book")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (book, id, eid, vector) = try await Self.book(dir)
    // Nothing heard: nothing to write.
    try await book.saveTracking()
    #expect(try await book.store.keyPairings().first?.heardWindow == nil)

    // The bridge does not search: the EID is unknown at once, and queued.
    #expect(book.keys.authenticate(eid: eid, at: .zero) == .unknown)
    Self.searchAll(book.keys)
    #expect(
      book.keys.authenticate(eid: eid, at: .zero) == .resolved(KeyedIdentity(scheme: .eid, pairing: id)))
    let heard = try #require(book.keys.tracking[id])
    #expect(heard.heardWindow == UInt32(vector.beaconClock >> vector.rotationExponent))
    try await book.saveTracking()
    let stored = try #require(try await book.store.keyPairings().first)
    #expect(stored.heardWindow == heard.heardWindow && stored.clockOffset == heard.clockOffset)

    // Unchanged since: the store is not written. A row changed behind the book's back stays as
    // it is, which it would not if the book wrote every time.
    try await book.store.saveTracking(pairing: id, clockOffset: 7, heardWindow: nil)
    try await book.saveTracking()
    #expect(try await book.store.keyPairings().first?.clockOffset == 7)
  }

  /// A beacon the store says was heard (a restart, or `scan` over the daemon's store) resolves
  /// from its first advertisement, with no search: a scanner may hear only that one. One never
  /// heard still waits for its search.
  @Test func aTrackedBeaconResolvesAtOnceAfterALoad() async throws {
    let dir = try scratchDirectory("pairing-book-tracked")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (first, id, eid, vector) = try await Self.book(dir)
    #expect(first.keys.authenticate(eid: eid, at: .zero) == .unknown, "never heard: searched for first")
    let window = UInt32(vector.beaconClock >> vector.rotationExponent)
    try await first.store.saveTracking(
      pairing: id, clockOffset: Int64(vector.beaconClock) - 1_000, heardWindow: window - 1)

    let book = PairingBook(
      store: first.store, bridge: first.bridge, paired: PairedBeacons(), epoch: 1_000, wallClock: nil)
    try await book.refresh()
    #expect(
      book.keys.authenticate(eid: eid, at: .zero) == .resolved(KeyedIdentity(scheme: .eid, pairing: id)))
    #expect(book.keys.statistics.eids.searches == 0)
  }

  /// An EID of a window older than the newest heard, found by a search run off the bridge, is a
  /// replay, and stays one from then on without another search.
  @Test func aReplayFoundOffTheBridgeIsRefusedFromThenOn() async throws {
    let dir = try scratchDirectory("pairing-book-replay")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (book, id, old, vector) = try await Self.book(dir)
    let key = try AES128Key(hex: vector.identityKey)
    let k = try #require(RotationExponent(rawValue: UInt8(vector.rotationExponent)))
    let later = EddystoneEID.eid(
      identityKey: key, rotationExponent: k, clock: UInt32(vector.beaconClock + 5 * 1024))
    let at = Timestamp(seconds: 5 * 1024)
    _ = book.keys.authenticate(eid: later, at: at)
    Self.searchAll(book.keys)
    #expect(book.keys.authenticate(eid: later, at: at) == .resolved(KeyedIdentity(scheme: .eid, pairing: id)))
    #expect(book.keys.authenticate(eid: old, at: at) == .unknown, "not in the table: searched off the bridge")
    Self.searchAll(book.keys)
    let searches = book.keys.statistics.eids.searches
    #expect(book.keys.authenticate(eid: old, at: at) == .replay(KeyedIdentity(scheme: .eid, pairing: id)))
    #expect(book.keys.authenticate(eid: old, at: at) == .replay(KeyedIdentity(scheme: .eid, pairing: id)))
    #expect(book.keys.statistics.eids.searches == searches)
    #expect(book.keys.statistics.eids.replaysRefused == 3)
  }

  /// A window heard and not yet written survives a refresh (another pairing added): the keys
  /// change in place, and the running tracking, not the store's older one, is kept.
  @Test func aRefreshKeepsAWindowHeardMeanwhile() async throws {
    let dir = try scratchDirectory("pairing-book-refresh")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (book, id, eid, _) = try await Self.book(dir)
    _ = book.keys.authenticate(eid: eid, at: .zero)
    Self.searchAll(book.keys)
    let heard = try #require(book.keys.tracking[id])
    #expect(heard.heardWindow != nil)
    #expect(try await book.store.keyPairings().first?.heardWindow == nil, "not written yet")
    _ = try await book.store.pairByKey(
      scheme: .rpa, key: KeyPairingStoreTests.digits("ec0234a357c8ad05341010a60a397d9b"),
      rotationExponent: nil,
      clockOffset: nil, deviceId: DeviceID("UNIT-R1"), label: nil)
    try await book.refresh()
    #expect(book.keys.tracking[id] == heard)
    // Still in the table: no search needed.
    let searches = book.keys.statistics.eids.searches
    #expect(
      book.keys.authenticate(eid: eid, at: .zero) == .resolved(KeyedIdentity(scheme: .eid, pairing: id)))
    #expect(book.keys.statistics.eids.searches == searches)
    #expect(book.keys.resolvesAddresses)
  }

  /// The daemon's path through a step of the wall clock: a pairing tracked before a 2-day step,
  /// and one paired after it (as `PairWithKey` stores it: against the stepped wall clock, then
  /// a refresh), both resolve through the ring's searches without a restart.
  @Test(arguments: [2 * 86_400, -2 * 86_400] as [Double])
  func pairingsBeforeAndAfterAStepResolve(step: Double) async throws {
    let dir = try scratchDirectory("pairing-book-step")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let vector = try OracleVectors.firstEID()
    let store = try Store(directory: dir)
    let start: Double = 1_800_000_000
    let wall = Mutex(start)
    let bridge = BeaconBridge(host: RecordingHost(), clock: TestClock())
    let book = PairingBook(
      store: store, bridge: bridge, paired: PairedBeacons(), epoch: Int64(start),
      wallClock: { wall.withLock { $0 } })
    let k = try #require(RotationExponent(rawValue: UInt8(vector.rotationExponent)))
    let before = try AES128Key(hex: vector.identityKey)
    let after = try AES128Key(hex: String(repeating: "5a", count: 16))
    // `pair --beacon-clock 100000` at the start.
    let first = try await store.pairByKey(
      scheme: .eid, key: KeyPairingStoreTests.digits(vector.identityKey), rotationExponent: k.rawValue,
      clockOffset: 100_000 - Int64(start), deviceId: DeviceID("UNIT-A"), label: nil)
    try await book.refresh()
    func eid(_ key: AES128Key, _ clock: Int64) -> UInt64 {
      EddystoneEID.eid(identityKey: key, rotationExponent: k, clock: UInt32(clock))
    }
    func resolve(_ eid: UInt64, at t: Double) -> AuthenticationResult {
      wall.withLock { $0 = start + t + (t >= 600 ? step : 0) }
      if case .resolved(let key) = book.keys.authenticate(eid: eid, at: Timestamp(seconds: t)) {
        return .resolved(key)
      }
      Self.searchAll(book.keys)
      return book.keys.authenticate(eid: eid, at: Timestamp(seconds: t))
    }
    let a = KeyedIdentity(scheme: .eid, pairing: try #require(first.pairing.key?.pairing))
    #expect(resolve(eid(before, 100_060), at: 60) == .resolved(a))

    // The step at 600 s; B paired at 700 s against the stepped wall clock (beacon clock 7e6).
    wall.withLock { $0 = start + 700 + step }
    let second = try await store.pairByKey(
      scheme: .eid, key: Array(String(repeating: "5a", count: 16).utf8), rotationExponent: k.rawValue,
      clockOffset: 7_000_000 - Int64(start + 700 + step), deviceId: DeviceID("UNIT-B"), label: nil)
    try await book.refresh()
    let b = KeyedIdentity(scheme: .eid, pairing: try #require(second.pairing.key?.pairing))

    for t in [5_000.0, 9_000.0] {
      #expect(
        resolve(eid(before, 100_000 + Int64(t)), at: t) == .resolved(a), "paired before the step, at \(t)")
      #expect(resolve(eid(after, 7_000_000 + Int64(t) - 700), at: t) == .resolved(b), "paired after, at \(t)")
    }
    #expect(book.keys.withAuthenticator { $0.clockSteps } == 1)
    // What is stored is against the wall clock as it now is.
    try await book.saveTracking()
    let stored = try await store.keyPairings()
    #expect(stored.first { $0.pairing.key == a }?.clockOffset == 100_000 - Int64(start + step))
    #expect(stored.first { $0.pairing.key == b }?.clockOffset == 7_000_000 - Int64(start + 700 + step))
  }

  /// Twenty refreshes at once, each after a pairing of its own: they run one at a time, and the
  /// keys end as the store ends.
  @Test func concurrentRefreshesEndAsTheStore() async throws {
    let dir = try scratchDirectory("pairing-book-concurrent")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (book, _, _, _) = try await Self.book(dir)
    await withThrowingTaskGroup(of: Void.self) { group in
      for n in 0..<20 {
        group.addTask {
          _ = try await book.store.pairByKey(
            scheme: .rpa, key: KeyPairingStoreTests.digits(String(format: "%032x", n + 1)),
            rotationExponent: nil,
            clockOffset: nil, deviceId: DeviceID("UNIT-\(n)"), label: nil)
          try await book.refresh()
        }
      }
    }
    try await book.refresh()
    let stored = try await book.store.keyPairings().count
    let held = book.keys.withAuthenticator { $0.eids.pairingIDs.count + $0.rpas.pairingIDs.count }
    #expect(stored == 21 && held == 21)
    #expect(await book.bridge.status.pairings.count == 21)
  }

  /// The service finds the EID off the bridge's executor; the next lookup resolves from the
  /// table; cancelling it ends it. How soon is timed where nothing else runs: EIDFloodTests
  /// (SIGTERM under a flood within 1 s, the process tier).
  @Test(.timeLimit(.minutes(1))) func theSearchServiceFindsAnEIDAndStopsWhenCancelled() async throws {
    let dir = try scratchDirectory("pairing-book-service")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (book, id, eid, _) = try await Self.book(dir)
    let service = Task { try await EIDSearchService(keys: book.keys).run() }
    #expect(book.keys.authenticate(eid: eid, at: .zero) == .unknown)
    try await waitUntil("the search found the EID") {
      book.keys.authenticate(eid: eid, at: .zero) == .resolved(KeyedIdentity(scheme: .eid, pairing: id))
    }
    service.cancel()
    // Cancelled, it returns; the time limit guards a service that would not.
    if case .failure(let error) = await service.result {
      #expect(error is CancellationError, "the service ended with \(error)")
    }
  }
}
