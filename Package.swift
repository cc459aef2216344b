// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "beaconbridge",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "BeaconCore", targets: ["BeaconCore"]),
    .library(name: "DBus", targets: ["DBus"]),
    .library(name: "BlueZ", targets: ["BlueZ"]),
    .executable(name: "beaconbridge", targets: ["beaconbridge"]),
    .executable(name: "beaconbridged", targets: ["beaconbridged"]),
  ],
  targets: [
    // Pure Swift: frames, filters, presence, selection, trips, the ScopeHost seam.
    .target(name: "BeaconCore"),
    // G-Zone gamification: derived game state and events from poll-and-diff. No I/O in derivation.
    .target(name: "GZone", dependencies: ["BeaconCore"]),
    .testTarget(name: "GZoneTests", dependencies: ["GZone", "BeaconCore", "BeaconTestSupport"]),
    // Test doubles: MockAdapter, TestClock, fixtures; the test tiers (tags) and `waitUntil`, the
    // one wait of the test suites.
    .target(name: "BeaconTestSupport", dependencies: ["BeaconCore"]),
    // Command parsing and output. A library so that parsing is tested without running.
    .target(
      name: "BeaconBridgeCLI",
      dependencies: [
        "BeaconCore", "BeaconCrypto", "BridgeDaemon", "BlueZ", "DBus", "HCI", "HCIParsing", "GZone",
        "EIDProvisioning",
      ]),
    .executableTarget(name: "beaconbridge", dependencies: ["BeaconBridgeCLI", "BridgeDaemon"]),
    // The daemon alone, which `beaconbridge run` execs: the daemon's modules on
    // FoundationEssentials, no Foundation or ICU linked (docs/PERFORMANCE.md). Its release link
    // (code layout, static libstdc++, no exported symbols) is `make release`'s: packaging/link/.
    .executableTarget(name: "beaconbridged", dependencies: ["BridgeDaemon", "BeaconCore"]),
    // SQLite, from Debian's libsqlite3-dev.
    .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // The daemon's parts: configuration file, store, uploader, G-Zone poller, health (doctor,
    // redaction), and the services (scan, D-Bus API, watchdog) that `run` groups.
    .target(
      name: "BridgeDaemon",
      dependencies: [
        "BeaconCore", "BeaconCrypto", "CSQLite", "CCurl", "CMosquitto", "DBus", "BlueZ", "HCI", "GZone",
      ]),
    // libmosquitto (MQTT 5 client), from Debian's libmosquitto-dev: the MQTT sink. Only
    // BridgeDaemon/Upload/MQTTClient.swift imports it. Not linked: dlopened on first use.
    .systemLibrary(name: "CMosquitto", providers: [.apt(["libmosquitto-dev"])]),
    // libcurl (OpenSSL flavour), from Debian's libcurl4-openssl-dev: the uploader's and the
    // G-Zone poller's HTTP. Only BridgeDaemon/Upload/CurlClient.swift, CurlTransferProcess.swift
    // and HTTPTransfers.swift import it. libcurl runs only in the child each daemon request is
    // served by (`beaconbridged --http-transfer`), which keeps it out of the daemon. The child is
    // the daemon's own executable, so libcurl is not linked (no pkgConfig, so no -lcurl): the
    // shim dlopens libcurl.so.4 in the child.
    .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    // libdbus-1, through pkg-config. Only the DBus module imports it.
    .systemLibrary(
      name: "CDBus",
      pkgConfig: "dbus-1",
      providers: [.apt(["libdbus-1-dev"])]
    ),
    // A typed Swift layer over libdbus-1: connection, messages, values, match rules, signals.
    .target(name: "DBus", dependencies: ["CDBus"]),
    // An AdvertisementSource over org.bluez (Adapter1, Device1, ObjectManager).
    .target(name: "BlueZ", dependencies: ["DBus", "BeaconCore"]),
    // Test-only: a private dbus-daemon and python-dbusmock processes.
    .target(name: "DBusTestSupport", dependencies: ["DBus"]),
    .testTarget(name: "DBusTests", dependencies: ["DBus", "DBusTestSupport", "BeaconTestSupport"]),
    // Test-only: bluetoothd's stand-in (python-dbusmock's bluez5 template) on a private bus.
    .target(name: "BlueZTestSupport", dependencies: ["BlueZ", "DBus", "DBusTestSupport", "BeaconCore"]),
    .testTarget(
      name: "BlueZTests",
      dependencies: [
        "BlueZ", "DBus", "DBusTestSupport", "BlueZTestSupport", "BeaconCore", "BeaconTestSupport",
      ]
    ),
    // The daemon and the CLI as users run them: the real binary as a process, against a private
    // bus, bluetoothd's stand-in and the fake backend. Tagged `.process`: `make test-process` runs
    // them one at a time.
    .testTarget(
      name: "EndToEndTests",
      dependencies: [
        "BlueZ", "DBus", "DBusTestSupport", "BlueZTestSupport", "BeaconCore", "BeaconTestSupport",
      ]
    ),
    .testTarget(
      name: "BeaconCoreTests",
      dependencies: ["BeaconCore", "BeaconTestSupport"]
    ),
    .testTarget(
      name: "BridgeDaemonTests",
      dependencies: ["BridgeDaemon", "BeaconCore", "BeaconCrypto", "BeaconTestSupport", "BlueZ", "GZone"]),
    .testTarget(
      name: "BeaconBridgeCLITests",
      dependencies: ["BeaconBridgeCLI", "BeaconCore", "BeaconTestSupport", "DBus"]
    ),
    // HCI wire formats, pure Swift with no imports: btsnoop captures, HCI events and
    // advertising reports, HCI command encoding. Kept apart so it is fuzzed on its own (Fuzz/).
    .target(name: "HCIParsing"),
    .testTarget(name: "HCIParsingTests", dependencies: ["HCIParsing"]),
    // libbluetooth for the raw HCI socket; only HCI imports it.
    .systemLibrary(name: "CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
    // The raw HCI AdvertisementSource and btsnoop replay into a Scenario.
    .target(
      name: "HCI", dependencies: ["CBlueZ", "HCIParsing", "BeaconCore"]),
    .testTarget(
      name: "HCITests", dependencies: ["HCI", "HCIParsing", "BeaconCore", "BeaconTestSupport"],
      exclude: ["Fixtures"]),
    // nettle, from Debian's nettle-dev: AES-128 and AES-EAX. Only BeaconCrypto imports it.
    .systemLibrary(name: "CNettle", pkgConfig: "nettle", providers: [.apt(["nettle-dev"])]),
    // Eddystone-EID, the encrypted TLM and resolvable private addresses: the key owner, the
    // computations over nettle, and the resolvers (docs/authentication.md). No I/O, no clock.
    .target(name: "BeaconCrypto", dependencies: ["CNettle"]),
    .testTarget(name: "BeaconCryptoTests", dependencies: ["BeaconCrypto", "BeaconTestSupport"]),
    // libhogweed, nettle's public-key half (Debian nettle-dev): X25519 and HKDF-SHA256 for the
    // EID key exchange. Only EIDProvisioning imports it, so the daemon does not link it.
    .systemLibrary(name: "CHogweed", pkgConfig: "hogweed", providers: [.apt(["nettle-dev"])]),
    // Provisioning an Eddystone-EID beacon over the Eddystone Configuration GATT Service: the key
    // exchange, the service's replies and the protocol as a state machine over an abstract GATT
    // transport (docs/authentication.md, "Provisioning"). No I/O; the CLI brings the transport.
    .target(name: "EIDProvisioning", dependencies: ["BeaconCrypto", "CHogweed"]),
    .testTarget(
      name: "EIDProvisioningTests", dependencies: ["EIDProvisioning", "BeaconCrypto", "BeaconTestSupport"]),
    // `make bench`: BeaconCore throughput and trip-start latency, release-built. Not run by tests.
    .executableTarget(
      name: "BeaconBench", dependencies: ["BeaconCore", "BeaconCrypto", "BridgeDaemon"],
      path: "Benchmarks/BeaconBench"),
    .executableTarget(
      name: "DBusPathBench", dependencies: ["BeaconCore", "BlueZ", "DBus"], path: "Benchmarks/DBusPathBench"),
  ],
  swiftLanguageModes: [.v6]
)
