/// A binary min-heap of deadlines, for the tables whose earliest deadline is asked for at every
/// step (beacon exits, trips' late windows): the earliest is found in O(1) and a deadline is
/// added or taken in O(log n), where a scan of every entry made each step O(n) (issue 28).
///
/// Deletion is lazy: an owner does not find and remove an element whose deadline moved or whose
/// entry left; it pushes a new element with a new `stamp` and judges each element it pops
/// (`stamp` unique per push, so an old element never passes for the new one). `needsRebuild`
/// says when the elements no longer in force outnumber those in force, so that a table that
/// churns does not make the heap grow without bound.
struct DeadlineHeap<Tag: Sendable>: Sendable {
  struct Element: Sendable {
    var deadline: Double
    var stamp: UInt64
    var tag: Tag

    /// Earlier first; among equal deadlines, the earlier push.
    @inline(__always)
    func precedes(_ other: Element) -> Bool {
      deadline < other.deadline || (deadline == other.deadline && stamp < other.stamp)
    }
  }

  private(set) var elements: [Element] = []
  /// The stamp of the last push.
  private(set) var lastStamp: UInt64 = 0

  var count: Int { elements.count }
  var isEmpty: Bool { elements.isEmpty }
  var top: Element? { elements.first }

  /// A new stamp for an element about to be pushed.
  mutating func nextStamp() -> UInt64 {
    lastStamp &+= 1
    return lastStamp
  }

  /// Adds a deadline; returns its stamp.
  @discardableResult
  mutating func push(_ deadline: Double, _ tag: Tag) -> UInt64 {
    let stamp = nextStamp()
    push(Element(deadline: deadline, stamp: stamp, tag: tag))
    return stamp
  }

  /// Adds an element back, with the stamp it had.
  mutating func push(_ element: Element) {
    elements.append(element)
    // A hole moves up to where the element belongs: one move per level, no swaps, no checks
    // per access (this runs for every beacon sighted between two deadline queries).
    elements.withUnsafeMutableBufferPointer { heap in
      var hole = heap.count - 1
      while hole > 0 {
        let parent = (hole - 1) / 2
        guard element.precedes(heap[parent]) else { break }
        heap[hole] = heap[parent]
        hole = parent
      }
      heap[hole] = element
    }
  }

  /// Removes and returns the earliest element.
  @discardableResult
  mutating func pop() -> Element? {
    guard !elements.isEmpty else { return nil }
    let last = elements.count - 1
    elements.swapAt(0, last)
    let popped = elements.removeLast()
    siftDown(from: 0)
    return popped
  }

  /// Whether a heap holding `count` elements for `live` entries should be rebuilt from the entries:
  /// when most of it is no longer in force. Rebuilding is O(live), paid for by the pushes that
  /// made the elements stale.
  func needsRebuild(live: Int) -> Bool { elements.count > 2 * live + 32 }

  /// Replaces the elements with `fresh` (each with a new stamp), in O(n).
  mutating func rebuild(_ fresh: [(deadline: Double, tag: Tag)]) -> [UInt64] {
    elements.removeAll(keepingCapacity: false)
    elements.reserveCapacity(fresh.count)
    var stamps: [UInt64] = []
    stamps.reserveCapacity(fresh.count)
    for item in fresh {
      let stamp = nextStamp()
      stamps.append(stamp)
      elements.append(Element(deadline: item.deadline, stamp: stamp, tag: item.tag))
    }
    if elements.count > 1 {
      for start in stride(from: elements.count / 2 - 1, through: 0, by: -1) { siftDown(from: start) }
    }
    return stamps
  }

  /// Moves the element at `start` down to where it belongs, as a hole (see `push`).
  private mutating func siftDown(from start: Int) {
    elements.withUnsafeMutableBufferPointer { heap in
      let count = heap.count
      guard start < count else { return }
      let element = heap[start]
      var hole = start
      while true {
        let left = 2 * hole + 1
        guard left < count else { break }
        var child = left
        if left + 1 < count, heap[left + 1].precedes(heap[left]) { child = left + 1 }
        guard heap[child].precedes(element) else { break }
        heap[hole] = heap[child]
        hole = child
      }
      heap[hole] = element
    }
  }
}
