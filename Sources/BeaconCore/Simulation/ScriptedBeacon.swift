#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A simulated iBeacon: advertises at a fixed interval over a time span, loses a share of its
/// packets, and wobbles its RSSI around a mean. Builds scenario entries (the demo's drive and the
/// test scenarios) deterministically from a seed.
public struct ScriptedBeacon: Sendable {
  public var address: BluetoothAddress
  public var identity: BeaconIdentity
  public var measuredPower: Int8 = -59
  /// Mean RSSI, dBm, as a function of time (for a beacon passing by).
  public var rssi: @Sendable (Double) -> Double
  public var interval: Double = 1
  public var loss: Double = 0
  /// RSSI noise, ± dB (uniform).
  public var noise: Double = 3
  public var from: Double
  public var until: Double

  public init(
    address: BluetoothAddress, identity: BeaconIdentity, measuredPower: Int8 = -59,
    rssi: @escaping @Sendable (Double) -> Double,
    interval: Double = 1, loss: Double = 0, noise: Double = 3, from: Double, until: Double
  ) {
    self.address = address
    self.identity = identity
    self.measuredPower = measuredPower
    self.rssi = rssi
    self.interval = interval
    self.loss = loss
    self.noise = noise
    self.from = from
    self.until = until
  }

  /// The iBeacon manufacturer data (Apple 0x004C): 0x02 0x15, UUID, major, minor, power.
  public var manufacturerData: ManufacturerData {
    let u = identity.uuid.uuid
    let uuidBytes: [UInt8] = [
      u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15,
    ]
    let body: [UInt8] =
      [0x02, 0x15] + uuidBytes + [
        UInt8(identity.major >> 8), UInt8(identity.major & 0xFF), UInt8(identity.minor >> 8),
        UInt8(identity.minor & 0xFF), UInt8(bitPattern: measuredPower),
      ]
    return ManufacturerData(companyID: BeaconFrameParser.appleCompanyID, data: body)
  }

  /// The advertisements it sends, with losses and noise drawn from `generator`.
  public func entries(using generator: inout SeededGenerator) -> [Scenario.Entry] {
    var out: [Scenario.Entry] = []
    var t = from
    while t <= until + 1e-9 {
      let lost = Double.random(in: 0..<1, using: &generator) < loss
      let wobble = Double.random(in: -noise...noise, using: &generator)
      if !lost {
        let value = Int((rssi(t) + wobble).rounded())
        out.append(
          Scenario.Entry(
            at: (t * 1000).rounded() / 1000,
            action: .advertisement(
              address: address, rssi: max(-120, min(-1, value)),
              payload: .structured(manufacturerData: [manufacturerData], serviceData: [], txPower: nil))))
      }
      t += interval
    }
    return out
  }
}

extension Scenario {
  /// Adds entries and keeps the order stable by time.
  public mutating func add(_ new: [Entry]) {
    entries = (entries + new).enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }
      .map(\.element)
  }
}
