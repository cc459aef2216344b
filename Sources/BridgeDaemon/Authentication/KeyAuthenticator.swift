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
  public private(set) var rpas = RPAResolver()
  public let epoch: Int64
  public private(set) var resolvesAddresses = false

  public init(eidClockTolerance: Double, epoch: Int64) {
    let clamped = min(max(eidClockTolerance, 0), Double(EIDResolver.Configuration.maximumTolerance))
    eids = EIDResolver(configuration: .init(tolerance: Int64(clamped)))
    self.epoch = epoch
  }

  /// The box's seconds at a pipeline time.
  public func boxSeconds(at time: Timestamp) -> Int64 {
    epoch &+ Int64(max(0, min(time.seconds, 1e15)).rounded(.down))
  }

  public mutating func add(eid pairing: EIDPairing) { eids.add(pairing) }

  public mutating func add(irk: AES128Key, pairing: Int64) {
    rpas.add(id: KeyPairingID(rawValue: pairing), irk: irk)
    resolvesAddresses = true
  }

  public mutating func authenticate(eid: UInt64, at time: Timestamp) -> AuthenticationResult {
    switch eids.resolve(eid: eid, atBoxSeconds: boxSeconds(at: time)) {
    case .resolved(let id, _): .resolved(KeyedIdentity(scheme: .eid, pairing: id.rawValue))
    case .replay(let id, _, _): .replay(KeyedIdentity(scheme: .eid, pairing: id.rawValue))
    case .unknown: .unknown
    }
  }

  public mutating func authenticate(address: BluetoothAddress) -> AuthenticationResult {
    guard let id = rpas.resolve(address: address.uint48) else { return .unknown }
    return .resolved(KeyedIdentity(scheme: .rpa, pairing: id.rawValue))
  }

  public mutating func openTLM(serviceData: [UInt8], of identity: KeyedIdentity, at time: Timestamp)
    -> [UInt8]?
  {
    guard identity.scheme == .eid, let frame = try? EncryptedTLM(serviceData: serviceData) else { return nil }
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
    var out = KeyAuthenticator(eidClockTolerance: scenario.configuration.eidClockTolerance, epoch: 0)
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

  /// Writes the bridge's EID tracking (clock offsets, newest heard windows) to the store (at
  /// exit, and before the pairings are reloaded); returns it.
  @discardableResult
  public static func saveTracking(of bridge: BeaconBridge, to store: Store) async throws(StoreError)
    -> [Int64: EIDResolver.Tracking]
  {
    let kept = (await bridge.authenticator as? KeyAuthenticator)?.tracking ?? [:]
    for (id, tracking) in kept.sorted(by: { $0.key < $1.key }) {
      try await store.saveTracking(
        pairing: id, clockOffset: tracking.clockOffset, heardWindow: tracking.heardWindow)
    }
    return kept
  }

  /// Loads the store's pairings by key into the bridge (at start, and when pairings change):
  /// the running authenticator's tracking is written back to the store first and carried over,
  /// so neither a restart nor a new pairing forgets a beacon's clock or reopens a replay.
  /// `epoch` stays the running one's; the first is the wall clock at the bridge's time 0.
  public static func refresh(bridge: BeaconBridge, store: Store, eidClockTolerance: Double)
    async throws(StoreError)
  {
    let running = await bridge.authenticator as? KeyAuthenticator
    let kept = try await saveTracking(of: bridge, to: store)
    let epoch: Int64
    if let running {
      epoch = running.epoch
    } else {
      let now = await bridge.now
      epoch = Int64((Date().timeIntervalSince1970 - now.seconds).rounded(.down))
    }
    let fresh = try await store.keyAuthenticator(
      eidClockTolerance: eidClockTolerance, epoch: epoch, tracking: kept)
    await bridge.setAuthenticator(fresh.isEmpty ? nil : fresh)
  }
}
