import BeaconCore
import BeaconCrypto
import BeaconTestSupport
import Synchronization
import Testing

@testable import BridgeDaemon

/// The daemon's box time follows the wall clock when it steps (NTP or GNSS time after a boot
/// without a real-time clock, a change by hand): a pairing made before the step and one made
/// after it both resolve, without a restart. The wall clock is one the test sets.
@Suite struct ClockStepTests {
  final class WallClock: Sendable {
    let seconds: Mutex<Double>
    init(_ start: Double) { seconds = Mutex(start) }
    func set(_ value: Double) { seconds.withLock { $0 = value } }
    var read: @Sendable () -> Double { { self.seconds.withLock { $0 } } }
  }

  static let start: Double = 1_800_000_000
  static let k = RotationExponent(rawValue: 10)!

  static func eid(_ key: AES128Key, clock: Int64) -> UInt64 {
    EddystoneEID.eid(identityKey: key, rotationExponent: k, clock: UInt32(clock))
  }

  /// `pair --beacon-clock N` at wall time `wall`: the offset the daemon stores.
  static func pairing(_ id: Int64, _ key: AES128Key, beaconClock: Int64, wall: Double) -> EIDPairing {
    EIDPairing(
      id: KeyPairingID(rawValue: id), identityKey: key, rotationExponent: k,
      clockOffset: beaconClock - Int64(wall))
  }

  @Test(arguments: [2 * 86_400, -2 * 86_400] as [Double])
  func pairingsBeforeAndAfterAStepResolve(step: Double) throws {
    let vector = try OracleVectors.firstEID()
    let before = try AES128Key(hex: vector.identityKey)
    let after = try AES128Key(hex: String(repeating: "5a", count: 16))
    let wall = WallClock(Self.start)
    var authenticator = KeyAuthenticator(eidClockTolerance: 86_400, epoch: Int64(Self.start))
    authenticator.wallClock = wall.read
    // Beacon A's clock is 100,000 at the start; B's 7,000,000.
    authenticator.add(eid: Self.pairing(1, before, beaconClock: 100_000, wall: Self.start))
    wall.set(Self.start + 60)
    #expect(
      authenticator.authenticate(eid: Self.eid(before, clock: 100_060), at: Timestamp(seconds: 60))
        == .resolved(KeyedIdentity(scheme: .eid, pairing: 1)))

    // The wall clock steps at pipeline time 600; the beacons' clocks do not.
    wall.set(Self.start + 600 + step)
    // B is paired after the step, against the stepped wall clock, before any EID is heard.
    authenticator.add(eid: Self.pairing(2, after, beaconClock: 7_000_000, wall: Self.start + 600 + step))

    let t = 5_000.0
    wall.set(Self.start + t + step)
    #expect(
      authenticator.authenticate(eid: Self.eid(before, clock: 100_000 + Int64(t)), at: Timestamp(seconds: t))
        == .resolved(KeyedIdentity(scheme: .eid, pairing: 1)), "paired before the step")
    #expect(
      authenticator.authenticate(
        eid: Self.eid(after, clock: 7_000_000 + Int64(t) - 600), at: Timestamp(seconds: t))
        == .resolved(KeyedIdentity(scheme: .eid, pairing: 2)), "paired after the step")
    #expect(authenticator.clockSteps == 1)
    #expect(authenticator.epoch == Int64(Self.start + step))

    // And again later, from the table or a search, with no further step.
    let later = 9_000.0
    wall.set(Self.start + later + step)
    #expect(
      authenticator.authenticate(
        eid: Self.eid(before, clock: 100_000 + Int64(later)), at: Timestamp(seconds: later))
        == .resolved(KeyedIdentity(scheme: .eid, pairing: 1)))
    #expect(
      authenticator.authenticate(
        eid: Self.eid(after, clock: 7_000_000 + Int64(later) - 600), at: Timestamp(seconds: later))
        == .resolved(KeyedIdentity(scheme: .eid, pairing: 2)))
    #expect(authenticator.clockSteps == 1)
  }

  /// A wall clock that only drifts (NTP slewing) is not a step.
  @Test func aSlewIsNotAStep() throws {
    let wall = WallClock(Self.start)
    var authenticator = KeyAuthenticator(eidClockTolerance: 86_400, epoch: Int64(Self.start))
    authenticator.wallClock = wall.read
    wall.set(Self.start + 100 + 1.5)
    _ = authenticator.authenticate(eid: 1, at: Timestamp(seconds: 100))
    #expect(authenticator.clockSteps == 0)
    #expect(authenticator.epoch == Int64(Self.start))
  }
}
