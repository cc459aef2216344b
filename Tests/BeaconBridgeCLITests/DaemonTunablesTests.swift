import Testing

@testable import BeaconBridgeCLI

/// `beaconbridge run` starts the daemon with glibc's per-thread caches of freed blocks off
/// (docs/PERFORMANCE.md), keeping the caller's other tunables, and the caller's own size for
/// those caches when it gives one.
@Suite struct DaemonTunablesTests {
  @Test func theCachesAreTurnedOffUnlessTheCallerSizesThem() {
    #expect(DaemonExecutable.tunables(nil) == "glibc.malloc.tcache_count=0")
    #expect(DaemonExecutable.tunables("") == "glibc.malloc.tcache_count=0")
    #expect(
      DaemonExecutable.tunables("glibc.malloc.arena_max=1")
        == "glibc.malloc.arena_max=1:glibc.malloc.tcache_count=0")
    #expect(
      DaemonExecutable.tunables("glibc.malloc.check=3:glibc.malloc.tcache_count=7")
        == "glibc.malloc.check=3:glibc.malloc.tcache_count=7")
  }
}
