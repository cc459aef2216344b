import BeaconCore
import BeaconCrypto
import FoundationEssentials

/// BeaconCore's `BeaconAuthenticator` over BeaconCrypto's resolvers (docs/authentication.md):
/// the one place where the pipeline's EIDs and addresses meet the keys. The daemon and the CLI
/// (`simulate`, `replay`, `scan`) build it from their pairings by key and hand it to the bridge.
///
/// The pipeline's time is seconds since the bridge started; the pairings' clock offsets are from
/// the box's clock, so `epoch` is the box's seconds at the pipeline's time 0 (the wall clock at
/// start for the daemon, 0 for a scenario, whose `beaconClock` is at its time 0).
public struct KeyAuthenticator: BeaconAuthenticator {
  public private(set) var eids: EIDResolver
  public private(set) var rpas: RPAResolver
  /// The box's seconds at the pipeline's time 0: moved when the wall clock steps (`wallClock`).
  public private(set) var epoch: Int64
  public private(set) var resolvesAddresses = false
  /// The wall clock, seconds since 1970, that box time follows; nil keeps `epoch` as given (a
  /// scenario, a capture). Read at each EID: a step (NTP or GNSS time after a boot without a
  /// real-time clock, a change by hand) moves `epoch` and the beacons' offsets with it
  /// (`EIDResolver.clockStepped(by:)`), so no pairing is lost until a restart.
  public var wallClock: (@Sendable () -> Double)?
  /// Steps of the wall clock followed, and the last one's size (seconds), for the tests.
  public private(set) var clockSteps = 0
  /// How far the wall clock may wander from box time before it is taken as a step: more than a
  /// second of rounding, less than any window (2^0 s is the smallest, but a step of a few
  /// seconds is within every window's tolerance anyway).
  public static let clockStepThreshold: Double = 2

  public init(eidClockTolerance: Double, epoch: Int64, rpaMaxAge: Double = BridgeConfiguration().rpaMaxAge) {
    let clamped = min(max(eidClockTolerance, 0), Double(EIDResolver.Configuration.maximumTolerance))
    eids = EIDResolver(configuration: .init(tolerance: Int64(clamped)))
    rpas = RPAResolver(maxAge: Int64(min(max(rpaMaxAge, 0), 1e9)))
    self.epoch = epoch
  }

  /// The box's seconds at a pipeline time.
  public func boxSeconds(at time: Timestamp) -> Int64 {
    epoch &+ Int64(max(0, min(time.seconds, 1e15)).rounded(.down))
  }

  public mutating func add(eid pairing: EIDPairing) { eids.add(pairing) }

  /// The EID search budget counted by record, not by time (`replay`): the operations one
  /// lookup adds, a tenth of a second of the daemon's rate, so a capture costs in proportion to its
  /// records whatever its timestamps.
  public mutating func countSearchesByRecord() {
    eids.chargeSearchesPerLookup(Self.searchOperationsPerRecord)
  }

  /// What one record adds to `replay`'s search budget: 20,000 AES operations.
  public static let searchOperationsPerRecord: Int64 = 20_000

  public mutating func add(irk: AES128Key, pairing: Int64) {
    rpas.add(id: KeyPairingID(rawValue: pairing), irk: irk)
    resolvesAddresses = true
  }

  /// Follows a step of the wall clock: box time is `epoch` plus the pipeline's time, and the
  /// wall clock is what the pairings' offsets were set against.
  public mutating func followWallClock(at time: Timestamp) {
    guard let wallClock else { return }
    let wall = wallClock()
    let box = Double(epoch) + max(0, min(time.seconds, 1e15))
    guard wall.isFinite, abs(wall - box) > Self.clockStepThreshold else { return }
    let delta = Int64((wall - box).rounded(.down))
    epoch &+= delta
    eids.clockStepped(by: delta)
    clockSteps += 1
  }

  public mutating func authenticate(eid: UInt64, at time: Timestamp) -> AuthenticationResult {
    followWallClock(at: time)
    return switch eids.resolve(eid: eid, atBoxSeconds: boxSeconds(at: time)) {
    case .resolved(let id, _): .resolved(KeyedIdentity(scheme: .eid, pairing: id.rawValue))
    case .replay(let id, _, _): .replay(KeyedIdentity(scheme: .eid, pairing: id.rawValue))
    case .unknown: .unknown
    }
  }

  /// Fills the EID table of the pairings already tracked, at the pipeline's `time`
  /// (`EIDResolver.primeTable(atBoxSeconds:)`). A step of the wall clock not followed yet
  /// changes nothing here: following it moves box time and every offset together, so each
  /// beacon's expected window stays where it is.
  public mutating func primeTable(at time: Timestamp) {
    eids.primeTable(atBoxSeconds: boxSeconds(at: time))
  }

  /// `authenticate(eid:at:)` without a search: an EID not in the table is `.unknown`, with the
  /// box's seconds to search for it at (`KeyRing` hands it to `EIDSearchService`).
  public mutating func authenticateWithoutSearch(eid: UInt64, at time: Timestamp) -> (
    AuthenticationResult, searchAt: Int64?
  ) {
    followWallClock(at: time)
    let t = boxSeconds(at: time)
    switch eids.resolve(eid: eid, atBoxSeconds: t, searching: false) {
    case .resolved(let id, _): return (.resolved(KeyedIdentity(scheme: .eid, pairing: id.rawValue)), nil)
    case .replay(let id, _, _): return (.replay(KeyedIdentity(scheme: .eid, pairing: id.rawValue)), nil)
    case .unknown(.searchNeeded): return (.unknown, t)
    case .unknown: return (.unknown, nil)
    }
  }

  /// Takes `fresh`'s pairings (read from the store) in place: what this one heard from the
  /// pairings both hold is kept, the table included (`EIDResolver.reconcile(with:)`).
  public mutating func reconcile(with fresh: KeyAuthenticator) {
    eids.reconcile(with: fresh.eids)
    rpas.reconcile(with: fresh.rpas)
    resolvesAddresses = !rpas.pairingIDs.isEmpty
  }

  /// A search for `eid`, to run elsewhere (`EIDSearch`).
  public func search(for eid: UInt64, atBoxSeconds t: Int64, near: Bool) -> EIDSearch {
    eids.search(for: eid, atBoxSeconds: t, near: near)
  }

  /// What a search run elsewhere came to, taken at box seconds `t`.
  public mutating func finish(_ search: EIDSearch, _ progress: EIDSearch.Progress, atBoxSeconds t: Int64) {
    switch progress {
    case .found(let id, let window, let offset):
      _ = eids.found(search, pairing: id, window: window, offset: offset, atBoxSeconds: t)
    case .notFound:
      eids.notFound(search, atBoxSeconds: t)
    case .searching:
      break
    }
  }

  public mutating func authenticate(address: BluetoothAddress, at time: Timestamp) -> AuthenticationResult {
    let seconds = Int64(max(0, min(time.seconds, 1e15)).rounded(.down))
    switch rpas.resolve(address: address.uint48, atSeconds: seconds) {
    case .resolved(let id): return .resolved(KeyedIdentity(scheme: .rpa, pairing: id.rawValue))
    case .replay(let id, _): return .replay(KeyedIdentity(scheme: .rpa, pairing: id.rawValue))
    case .unknown: return .unknown
    }
  }

  public mutating func openTLM(serviceData: [UInt8], of identity: KeyedIdentity, at time: Timestamp)
    -> [UInt8]?
  {
    guard identity.scheme == .eid, let frame = try? EncryptedTLM(serviceData: serviceData) else { return nil }
    followWallClock(at: time)
    return eids.openTLM(
      frame, of: KeyPairingID(rawValue: identity.pairing), atBoxSeconds: boxSeconds(at: time)
    ).map(EncryptedTLM.plainFrame(tlm:))
  }
}

extension KeyAuthenticator {
  /// The authenticator for a scenario's pairings by key, or nil when it has none. Its box clock
  /// is the scenario's: `beaconClock` is the beacon's clock at time 0.
  public static func forScenario(_ scenario: Scenario) -> KeyAuthenticator? {
    guard !scenario.keyPairings.isEmpty else { return nil }
    var out = KeyAuthenticator(
      eidClockTolerance: scenario.configuration.eidClockTolerance, epoch: 0,
      rpaMaxAge: scenario.configuration.rpaMaxAge)
    for keyed in scenario.keyPairings {
      guard let key = keyed.pairing.key else { continue }
      switch keyed.scheme {
      case .eid(let identityKey, let k, let clock):
        guard let exponent = RotationExponent(rawValue: k), let aes = Self.key(identityKey.bytes) else {
          continue
        }
        out.add(
          eid: EIDPairing(
            id: KeyPairingID(rawValue: key.pairing), identityKey: aes, rotationExponent: exponent,
            beaconClock: clock,
            atBoxSeconds: 0))
      case .irk(let irk):
        guard let aes = Self.key(irk.bytes) else { continue }
        out.add(irk: aes, pairing: key.pairing)
      }
    }
    return out
  }

  private static func key(_ bytes: [UInt8]) -> AES128Key? {
    bytes.withUnsafeBytes { raw in try? AES128Key(bytes: raw) }
  }
}

extension KeyAuthenticator {
  /// Whether it holds any pairing: an empty one is not handed to the pipeline.
  public var isEmpty: Bool { eids.pairingIDs.isEmpty && rpas.pairingIDs.isEmpty }

  /// Each EID pairing's tracking (clock offset, newest heard window), by pairing number.
  public var tracking: [Int64: EIDResolver.Tracking] {
    var out: [Int64: EIDResolver.Tracking] = [:]
    for id in eids.pairingIDs { out[id.rawValue] = eids.tracking(of: id) }
    return out
  }
}
