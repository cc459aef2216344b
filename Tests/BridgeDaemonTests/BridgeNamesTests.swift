import Testing

@testable import BridgeDaemon

/// Bridge1's names are written once (`BridgeServiceNames`); the introspection data and the API
/// document must list the same methods.
@Suite struct BridgeNamesTests {
  @Test func introspectionListsExactlyTheMethods() {
    let xml =
      BridgeService.introspection.components(separatedBy: "<interface name=\"org.beaconbridge.Bridge1\">")
      .last ?? ""
    for method in BridgeServiceNames.Method.all {
      #expect(xml.contains("<method name=\"\(method.rawValue)\""), "\(method.rawValue) is not introspectable")
    }
    #expect(xml.components(separatedBy: "<method ").count - 1 == BridgeServiceNames.Method.all.count)
  }
}
