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

  /// After `mapLargeBlocks`, a block of the threshold's size is a mapping of its own, even after
  /// a larger one was freed (which raises glibc's own, moving threshold past it). glibc marks such
  /// a chunk IS_MMAPPED, bit 1 of the size word before it.
  @Test func largeBlocksAreMappedOnTheirOwn() {
    UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16).deallocate()
    #expect(MallocTuning.mapLargeBlocks())
    UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16).deallocate()
    let block = UnsafeMutableRawPointer.allocate(byteCount: MallocTuning.largeBlock + 1024, alignment: 16)
    defer { block.deallocate() }
    let sizeWord = (block - MemoryLayout<UInt>.size).load(as: UInt.self)
    #expect(sizeWord & 2 != 0, "a \(MallocTuning.largeBlock + 1024)-byte block came from an arena")
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
