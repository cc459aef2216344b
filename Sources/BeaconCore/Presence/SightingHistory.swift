#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The last `capacity` sighting times of a beacon, in arrival order, with what the exit delay
/// needs from them kept up to date as sightings arrive.
///
/// A ring buffer, so that the oldest time is dropped without shifting the others; the shortest
/// gap is maintained with a count of the gaps equal to it, so the window is rescanned only when
/// the last gap at the minimum leaves it (about once per `capacity` sightings for a jittery
/// beacon, never for a perfectly regular one). Every value is the one the straightforward scan
/// would compute (a minimum, and a difference of two stored times), so the exit delay is
/// bit-for-bit the same.
struct SightingHistory: Sendable {
  static let capacity = 64
  /// Gaps this short or shorter are the same packet heard twice (or several receivers), not
  /// the advertising interval.
  static let minimumGap = 0.005

  /// The times, seconds; once full, `oldest` is where the ring starts.
  private var times: [Double]
  private var oldest = 0
  /// The shortest gap longer than `minimumGap` between consecutive times; infinity when none is.
  private(set) var interval = Double.infinity
  /// How many gaps in the window equal `interval`.
  private var atInterval = 0

  /// The buffer grows as sightings come (to `capacity` after a few doublings), not reserved
  /// whole at the first: a flood of random addresses is thousands of beacons heard once each,
  /// and 512 bytes reserved for each made most of the flood's heap.
  init(_ first: Timestamp) {
    times = [first.seconds]
  }

  var count: Int { times.count }

  /// Newest minus oldest.
  var span: Double { times[newestIndex] - times[oldest] }

  private var newestIndex: Int { oldest == 0 ? times.count - 1 : oldest - 1 }

  /// The times, oldest first.
  var recent: [Timestamp] {
    (0..<times.count).map { Timestamp(seconds: times[(oldest + $0) % times.count]) }
  }

  mutating func append(_ time: Timestamp) {
    let t = time.seconds
    if times.count < Self.capacity {
      // Not full yet: the ring has not turned, so the newest time is the last.
      let previous = times[times.count - 1]
      times.append(t)
      consider(t - previous)
    } else {
      // Full (the steady state): the newest time replaces the oldest, in one pass over the
      // buffer (no bounds check or uniqueness check per access).
      let oldest = self.oldest
      let next = oldest + 1 == Self.capacity ? 0 : oldest + 1
      let newest = oldest == 0 ? Self.capacity - 1 : oldest - 1
      let (previous, evicted) = times.withUnsafeMutableBufferPointer { times in
        let gaps = (times[newest], times[next] - times[oldest])
        times[oldest] = t
        return gaps
      }
      if evicted > Self.minimumGap, evicted == interval { atInterval -= 1 }
      self.oldest = next
      consider(t - previous)
    }
    // With no gap left at the old minimum every remaining gap is longer than it, so a new gap
    // at or below it is the new minimum; otherwise the window is rescanned.
    if atInterval == 0 && interval.isFinite { rescan() }
  }

  /// Counts a gap toward the shortest one and how many gaps are at it.
  private mutating func consider(_ gap: Double) {
    guard gap > Self.minimumGap else { return }
    if gap < interval {
      interval = gap
      atInterval = 1
    } else if gap == interval {
      atInterval += 1
    }
  }

  private mutating func rescan() {
    interval = .infinity
    atInterval = 0
    var a = times[oldest]
    for k in 1..<times.count {
      let b = times[(oldest + k) % times.count]
      consider(b - a)
      a = b
    }
  }
}
