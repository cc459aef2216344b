import BeaconCore
import BeaconCrypto
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// The EID beacons' tracking reaches the store while the daemon runs, not only at its exit:
/// what a kill -9 leaves is what the next start resumes from.
@Suite struct TrackingSaverTests {
  @Test func aHeardWindowIsWrittenOnceAndAnUnchangedOneNotAgain() async throws {
    let dir = try scratchDirectory("tracking-saver")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let vector = try OracleVectors.firstEID()
    let store = try Store(directory: dir)
    let pairing = try await store.pairByKey(
      scheme: .eid, key: KeyPairingStoreTests.digits(vector.identityKey),
      rotationExponent: UInt8(vector.rotationExponent), clockOffset: Int64(vector.beaconClock) - 1_000,
      deviceId: DeviceID("UNIT-E1"), label: nil)
    let id = try #require(pairing.pairing.key?.pairing)
    #expect(try await store.keyPairings().first?.heardWindow == nil)

    let bridge = BeaconBridge(host: RecordingHost(), clock: TestClock())
    let saver = TrackingSaver(bridge: bridge, store: store, logger: DaemonLogger(environment: [:]))
    // Nothing heard, nothing held: nothing to write.
    #expect(await saver.save(changedSince: [:]).isEmpty)

    // The beacon heard: its window is the authenticator's, and the saver writes it.
    var authenticator = try await store.keyAuthenticator(eidClockTolerance: 86_400, epoch: 1_000)
    let eid = vector.eid.reduce(0 as UInt64) { $0 << 8 | UInt64($1) }
    #expect(authenticator.authenticate(eid: eid, at: .zero) != .unknown)
    let heard = try #require(authenticator.tracking[id])
    #expect(heard.heardWindow == UInt32(vector.beaconClock >> vector.rotationExponent))
    await bridge.setAuthenticator(authenticator)
    let saved = await saver.save(changedSince: [:])
    #expect(saved == [id: heard])
    let stored = try #require(try await store.keyPairings().first)
    #expect(stored.heardWindow == heard.heardWindow && stored.clockOffset == heard.clockOffset)

    // Unchanged since: the store is not written. A row changed behind the saver's back stays
    // as it is, which it would not if the saver wrote every look.
    try await store.saveTracking(pairing: id, clockOffset: 7, heardWindow: nil)
    #expect(await saver.save(changedSince: saved) == saved)
    #expect(try await store.keyPairings().first?.clockOffset == 7)
  }
}
