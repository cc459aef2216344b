/// One Eddystone-EID pairing: the identity key, K, and the offset from the box's clock to the
/// beacon's (beacon clock = box seconds + `clockOffset`).
public struct EIDPairing: Sendable {
  public let id: KeyPairingID
  public let identityKey: AES128Key
  public let rotationExponent: RotationExponent
  public let clockOffset: Int64
  /// The newest window heard from this beacon, kept across restarts so that a replay stays
  /// refused after one (`EIDResolver.tracking(of:)` gives it back to be stored).
  public let heardWindow: UInt32?

  public init(
    id: KeyPairingID, identityKey: AES128Key, rotationExponent: RotationExponent, clockOffset: Int64,
    heardWindow: UInt32? = nil
  ) {
    self.id = id
    self.identityKey = identityKey
    self.rotationExponent = rotationExponent
    self.clockOffset = clockOffset
    self.heardWindow = heardWindow
  }

  /// A pairing from the beacon's clock as its provisioning tool reports it, at a box time.
  public init(
    id: KeyPairingID, identityKey: AES128Key, rotationExponent: RotationExponent, beaconClock: UInt32,
    atBoxSeconds boxSeconds: Int64
  ) {
    self.init(
      id: id, identityKey: identityKey, rotationExponent: rotationExponent,
      clockOffset: Int64(beaconClock) - boxSeconds)
  }
}
