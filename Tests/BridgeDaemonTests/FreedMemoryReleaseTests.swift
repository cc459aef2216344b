import BeaconCore
import Testing

@testable import BridgeDaemon

@Suite struct FreedMemoryReleaseTests {
  /// The decision at each check, for beacon counts seen in that order.
  func decisions(_ counts: [Int]) -> [Bool] {
    var release = PeakShrink()
    return counts.map { release.shouldRelease(tracked: $0) }
  }

  @Test func releasesOnceAfterALargePeakFallsToAQuarter() {
    // The peak starts again from the count at the release: no release at every later check.
    #expect(decisions([200, 5000, 1251, 1000, 900, 0]) == [false, false, false, true, false, false])
    // Unless what is left is itself large, and then leaves.
    #expect(decisions([8000, 2000, 1900, 400]) == [false, true, false, true])
  }

  @Test func ordinaryComingsAndGoingsNeverRelease() {
    #expect(decisions([1000, 0, 1024, 3, 800, 0]) == Array(repeating: false, count: 6))
  }

  @Test func aSecondFloodReleasesAgain() {
    #expect(decisions([4000, 10, 6000, 1500]) == [false, true, false, true])
  }

  /// glibc takes the pinned threshold. Whether a given block is then mapped depends on what the
  /// arena holds free (a free chunk large enough is used first), which other tests running in
  /// this process change: what the setting does is measured on the daemon, by `make bench`'s
  /// flood row (docs/PERFORMANCE.md).
  @Test func glibcTakesTheLargeBlockSetting() {
    #expect(MallocTuning.mapLargeBlocks())
  }

  @Test func glibcTakesTheArenaSettingAndReturnsFreedPages() {
    #expect(MallocTuning.useOneArena())
    // 64 MiB in blocks small enough to come from the heap (not mmap), then freed: their pages are
    // free but still mapped until trimmed.
    var blocks: [UnsafeMutableRawPointer] = []
    for _ in 0..<16_384 { blocks.append(UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)) }
    for block in blocks { block.deallocate() }
    #expect(MallocTuning.returnFreedMemory())
  }
}
