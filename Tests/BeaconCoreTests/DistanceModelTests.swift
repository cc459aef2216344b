import BeaconCore
import Testing

/// AltBeacon's CurveFittedDistanceCalculator with its default coefficients (0.42093, 6.9476,
/// 0.54992): d = 0.42093·(rssi/power)^6.9476 + 0.54992, and (rssi/power)^10 when rssi/power < 1.
@Suite struct DistanceModelTests {
  let model = DistanceModel()

  /// Expected values worked from the formula above (and checked with a calculator); at rssi = power
  /// the curve gives A + C = 0.42093 + 0.54992.
  @Test(arguments: [
    (-59.0, -59, 0.97085),
    (-65.0, -65, 0.97085),
    (-50.0, -59, 0.19106446691360568),  // (50/59)^10
    (-30.0, -59, 0.0011552937683744259),  // (30/59)^10
    (-70.0, -59, 1.9304364502555003),
    (-90.0, -59, 8.462784006546398),
    (-100.0, -75, 3.656154548914359),
  ])
  func curveFit(rssi: Double, power: Int, metres: Double) throws {
    let d = try #require(model.distance(rssi: rssi, powerAt1m: power))
    #expect(abs(d - metres) < 1e-9)
  }

  @Test func coefficientsAreAltBeaconDefaults() {
    #expect(model.coefficientA == 0.42093)
    #expect(model.coefficientB == 6.9476)
    #expect(model.coefficientC == 0.54992)
  }

  @Test(arguments: [
    (0.0, -59),  // 0 is an unknown RSSI; AltBeacon answers -1, "cannot determine"
    (-60.0, 0),  // no calibrated power
    (5.0, -59),
    (-60.0, 3),
    (Double.nan, -59),
    (-Double.infinity, -59),
  ])
  func noDistanceWithoutUsableInput(rssi: Double, power: Int) {
    #expect(model.distance(rssi: rssi, powerAt1m: power) == nil)
  }

  @Test func fartherAsTheSignalWeakens() throws {
    var previous = 0.0
    for rssi in stride(from: -40.0, through: -110, by: -1) {
      let d = try #require(model.distance(rssi: rssi, powerAt1m: -59))
      #expect(d >= previous, "at \(rssi) dBm")
      previous = d
    }
  }

  @Test(arguments: [
    (0.0 as Double?, Proximity.immediate), (0.3, .immediate), (0.4999, .immediate), (0.5, .near),
    (0.97085, .near), (2.99, .near), (3.0, .far), (8.46, .far), (nil, .unknown), (.nan, .unknown),
    (-1.0, .unknown),
  ])
  func proximityBins(distance: Double?, proximity: Proximity) {
    #expect(model.proximity(distance: distance) == proximity)
  }

  @Test func proximityFromRSSI() {
    #expect(model.proximity(distance: model.distance(rssi: -40, powerAt1m: -59)) == .immediate)
    #expect(model.proximity(distance: model.distance(rssi: -59, powerAt1m: -59)) == .near)
    #expect(model.proximity(distance: model.distance(rssi: -90, powerAt1m: -59)) == .far)
    #expect(Proximity.immediate < .near && Proximity.near < .far && Proximity.far < .unknown)
  }

  @Test func eddystonePowerFeedsTheModel() throws {
    // Eddystone's TX power is at 0 m; -18 dBm there is -59 dBm at 1 m.
    let frame = try BeaconFrameParser.parseEddystone([0x10, 0xEE, 0x02, 0x61]).get()
    let power = try #require(frame.powerAt1m)
    #expect(model.distance(rssi: -59, powerAt1m: power) == 0.97085)
  }
}
