// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "beaconbridge",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "BeaconCore", targets: ["BeaconCore"]),
    .executable(name: "beaconbridge", targets: ["beaconbridge"]),
  ],
  targets: [
    // Pure Swift: frames, filters, presence, selection, trips, the ScopeHost seam.
    .target(name: "BeaconCore"),
    // Test doubles: MockAdapter, TestClock, fixtures.
    .target(name: "BeaconTestSupport", dependencies: ["BeaconCore"]),
    // Command parsing and output. A library so that parsing is tested without running.
    .target(name: "BeaconBridgeCLI", dependencies: ["BeaconCore", "HCI"]),
    .executableTarget(name: "beaconbridge", dependencies: ["BeaconBridgeCLI"]),
    .testTarget(
      name: "BeaconCoreTests",
      dependencies: ["BeaconCore", "BeaconTestSupport"]
    ),
    .testTarget(
      name: "BeaconBridgeCLITests",
      dependencies: ["BeaconBridgeCLI", "BeaconCore", "BeaconTestSupport"]
    ),
    // HCI wire formats, pure Swift with no imports: btsnoop captures, HCI events and
    // advertising reports, HCI command encoding. Kept apart so it is fuzzed on its own (Fuzz/).
    .target(name: "HCIParsing"),
    .testTarget(name: "HCIParsingTests", dependencies: ["HCIParsing"]),
    // libbluetooth for the raw HCI socket; only HCI imports it.
    .systemLibrary(name: "CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
    // The raw HCI AdvertisementSource and btsnoop replay into a Scenario.
    .target(name: "HCI", dependencies: ["CBlueZ", "HCIParsing", "BeaconCore"]),
    .testTarget(name: "HCITests", dependencies: ["HCI", "HCIParsing", "BeaconCore"]),
  ],
  swiftLanguageModes: [.v6]
)
