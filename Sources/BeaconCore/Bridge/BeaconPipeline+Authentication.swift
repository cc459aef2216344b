// The paths of advertisements that a key may prove: resolvable private addresses, encrypted
// TLM frames and Eddystone-EIDs. Each is out of line (`@inline(never)`), off the plain iBeacon
// path, and reaches `sighted` through `sightedByKey`.
extension BeaconPipeline {
  /// A resolvable private address that an IRK pairing resolves: the advertisement is one
  /// sighting of that pairing, calibrated by its first frame that carries a power. Returns
  /// whether it was.
  @inline(never)
  mutating func provenByAddress(
    _ ad: Advertisement, frames: BeaconFrames, at time: Timestamp, into steps: inout [Step]
  ) -> Bool {
    guard triesAddresses, ad.address.isResolvablePrivateForm else { return false }
    let key: KeyedIdentity
    switch authenticator?.authenticate(address: ad.address, at: time) ?? .unknown {
    case .resolved(let proven):
      key = proven
    case .replay(let stale):
      // Not proven: the advertisement goes on as one sent in clear (`none`), which
      // `requireAuthenticated` keeps from the active beacon.
      rpaReplaysRefused += 1
      steps.append(
        .event(
          .rejected(
            address: ad.address,
            FrameRejection(
              .rpaReplay,
              "the private address of \(stale) was first heard more than rpaMaxAge ago, or before a newer address of that device: refused as a replay"
            ))))
      return false
    case .unknown:
      return false
    }
    // Presence reads only a frame's power: an address without one is an uncalibrated sighting.
    let frame = frames.first { $0.powerAt1m != nil } ?? .ignored(IgnoredFrame(frameType: 0xFF))
    sightedByKey(frame, key, from: ad, at: time, into: &steps)
    return true
  }

  /// An encrypted TLM (Eddystone-EID specification, "Encrypted TLM") opened with the key of an
  /// EID pairing heard from the same address within the link window: the plain TLM frame, which
  /// then links to that beacon as any TLM does. nil when no such pairing's key opens it (it is
  /// then counted as the ignored kind `eddystoneTLMEncrypted`).
  @inline(never)
  mutating func openedTLM(_ ad: Advertisement, at time: Timestamp) -> BeaconFrame? {
    guard authenticator != nil,
      let data = ad.serviceData.first(where: { $0.uuid == .eddystone && $0.data.first == 0x20 })?.data
    else { return nil }
    let since = Timestamp(seconds: time.seconds - health.settings.telemetryLinkWindow)
    for case .keyed(let key) in tracker.ids(heardFrom: ad.address, since: since) where key.scheme == .eid {
      guard let plain = authenticator?.openTLM(serviceData: data, of: key, at: time),
        case .success(let frame) = BeaconFrameParser.parseEddystone(plain), case .eddystoneTLM = frame
      else { continue }
      return frame
    }
    return nil
  }

  /// An Eddystone-EID frame: a sighting of the pairing it resolves to; a replay is refused with a
  /// `rejected` line; an EID no pairing makes is counted as an ignored kind.
  @inline(never)
  mutating func heardEID(
    _ eid: EddystoneEIDFrame, frame: BeaconFrame, from ad: Advertisement, at time: Timestamp,
    into steps: inout [Step]
  ) {
    switch authenticator?.authenticate(eid: eid.eid, at: time) ?? .unknown {
    case .resolved(let key):
      sightedByKey(frame, key, from: ad, at: time, into: &steps)
    case .replay(let key):
      eidReplaysRefused += 1
      steps.append(
        .event(
          .rejected(
            address: ad.address,
            FrameRejection(
              .eidReplay,
              "an EID of \(key) from a window older than the newest heard from that beacon: refused as a replay"
            ))))
    case .unknown:
      health.countIgnored(IgnoredFrame(frameType: 0x30))
    }
  }
}
