import BeaconCore
import BridgeDaemon
import Foundation

/// `pair --nearest`: the strongest beacon in range, chosen in the open.
enum NearestBeacon {
  struct Candidate {
    var identity: BeaconIdentity
    var smoothed: Double?
    var sightings: Int
  }

  /// Two beacons closer than this are too close to call.
  static let margin = 3.0

  static func choose(wait: Double, backend: ScanBackend, adapter: HCIDeviceID?, console: any Console) async
    -> BeaconIdentity?
  {
    var candidates: [Candidate]
    if (try? await DaemonClient.json(BridgeServiceNames.Method.status)) != nil {
      console.err("beaconbridge: listening through the daemon for \(Int(wait)) s…\n")
      candidates = []
      let deadline = ContinuousClock.now.advanced(by: .seconds(wait))
      repeat {
        switch try? await DaemonClient.status().document {
        case .success(let status): candidates = fromStatus(status)
        case .failure(let error):
          console.err("beaconbridge: \(error.description)\n")
          return nil
        case nil: break
        }
        if ContinuousClock.now >= deadline { break }
        try? await Task.sleep(for: .seconds(1))
      } while true
    } else {
      console.err("beaconbridge: scanning with \(backend.rawValue) for \(Int(wait)) s…\n")
      do {
        candidates = try await scan(wait: wait, backend: backend, adapter: adapter, console: console)
      } catch {
        console.err("beaconbridge: \(ScanAdvice.explain(error))\n")
        return nil
      }
    }
    let ranked = candidates.sorted { ($0.smoothed ?? -200) > ($1.smoothed ?? -200) }
    guard let best = ranked.first else {
      console.err(
        "beaconbridge: no iBeacon heard in \(Int(wait)) s; bring the box next to the beacon, or wait longer (--wait)\n"
      )
      return nil
    }
    let strength = best.smoothed.map { String(format: "%.1f dBm", $0) } ?? "unknown strength"
    var why = "strongest at \(strength), heard \(best.sightings) time(s)"
    if let runnerUp = ranked.dropFirst().first {
      let gap = (best.smoothed ?? -200) - (runnerUp.smoothed ?? -200)
      why += String(
        format: "; next is %@ %d/%d, %.1f dB weaker", runnerUp.identity.uuid.uuidString,
        runnerUp.identity.major, runnerUp.identity.minor, gap)
      if best.smoothed == nil || gap < margin {
        console.err(
          "beaconbridge: too close to call: \(best.identity) and \(runnerUp.identity) are within \(margin) dB. Bring the box next to the beacon, or pair by --uuid/--major/--minor\n"
        )
        return nil
      }
    } else {
      why += "; no other beacon in range"
    }
    console.err("beaconbridge: chose \(best.identity): \(why)\n")
    return best.identity
  }

  static func fromStatus(_ status: StatusDocument) -> [Candidate] {
    status.beaconsInRange.compactMap { b in
      guard let text = b.identity.uuid, let uuid = UUID(uuidString: text), let major = b.identity.major,
        let minor = b.identity.minor, let m = UInt16(exactly: major), let n = UInt16(exactly: minor)
      else { return nil }
      return Candidate(
        identity: BeaconIdentity(uuid: uuid, major: m, minor: n), smoothed: b.smoothedRSSI,
        sightings: b.sightings)
    }
  }

  static func scan(wait: Double, backend: ScanBackend, adapter: HCIDeviceID?, console: any Console)
    async throws
    -> [Candidate]
  {
    var configuration = BridgeConfiguration()
    backend.apply(to: &configuration)
    let bridge = BeaconBridge(host: ScanHost(configuration: configuration, console: console))
    try await bridge.start()
    var scan = try ScanCommand.parseForNearest(backend: backend, adapter: adapter)
    scan.json = true
    let source = scan.makeSource(console) { _ in true }
    try await ScanCommand.scan(
      bridge: bridge, source: source, until: { try? await Task.sleep(for: .seconds(wait)) }
    )
    .get()
    return await bridge.status.beaconsInRange.compactMap { b in
      guard let identity = b.id.identity else { return nil }
      return Candidate(identity: identity, smoothed: b.smoothedRSSI, sightings: b.sightings)
    }
  }
}
