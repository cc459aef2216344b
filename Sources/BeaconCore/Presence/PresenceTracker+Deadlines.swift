// Presence's exit deadlines: one heap element in force per beacon, queued lazily after
// sightings and judged by the same test as a scan of every beacon would.

extension PresenceTracker {
  /// Exits every beacon not seen for `exitTimeout`, as of `time`.
  ///
  /// Only the beacons whose deadline is due are visited (from `deadlines`), each judged by the
  /// test a scan would apply (`time - lastSeen >= exitAfter`): a deadline is a sum, rounded, and
  /// the test a difference, so elements within a few ulps after `time` are judged too.
  public mutating func expire(at time: Timestamp) -> [PresenceEvent] {
    queueDeadlines()
    var due: [Int] = []
    var notYet: [DeadlineHeap<Int>.Element] = []
    while let top = deadlines.top {
      guard isInForce(top) else {
        deadlines.pop()
        continue
      }
      guard top.deadline <= time.seconds || Self.withinRounding(top.deadline, time.seconds) else { break }
      deadlines.pop()
      let entry = entries[top.tag]
      if time - entry.beacon.lastSeen >= entry.exitAfter! {
        due.append(top.tag)
      } else if top.deadline != entry.deadline {
        queue(top.tag)
      } else {
        notYet.append(top)
      }
    }
    for element in notYet { deadlines.push(element) }
    guard !due.isEmpty else { return [] }
    let gone = due.map { entries[$0].tracked(settings.distance) }
      .sorted { ($0.lastSeen, $0.id) < ($1.lastSeen, $1.id) }
    for beacon in gone {
      remove(beacon.id)
      unindex(beacon)
    }
    return gone.map { .exited($0, .timeout) }
  }

  /// Whether `deadline`, just after `time`, is close enough that `time - lastSeen >= exitAfter`
  /// may hold for it though `lastSeen + exitAfter > time` (each rounds once, to at most half an
  /// ulp of the larger magnitude).
  private static func withinRounding(_ deadline: Double, _ time: Double) -> Bool {
    deadline - time <= 8 * max(deadline.magnitude, time.magnitude).ulp
  }

  /// When the next beacon would time out. Mutating: it queues the deadlines sightings moved and
  /// drops heap elements no longer in force.
  public var nextDeadline: Timestamp? {
    mutating get {
      queueDeadlines()
      while let top = deadlines.top {
        guard isInForce(top) else {
          deadlines.pop()
          continue
        }
        guard top.deadline == entries[top.tag].deadline else {
          deadlines.pop()
          queue(top.tag)
          continue
        }
        return Timestamp(seconds: top.deadline)
      }
      return nil
    }
  }

  /// Whether a heap element is its entry's deadline in force.
  @inline(__always)
  private func isInForce(_ element: DeadlineHeap<Int>.Element) -> Bool {
    element.tag < entries.count && entries[element.tag].stamp == element.stamp
  }

  /// Computes the exit delay of every entry in `unqueued` and queues its deadline.
  mutating func queueDeadlines() {
    guard !unqueued.isEmpty else { return }
    for index in unqueued {
      if entries[index].exitAfter == nil { entries[index].exitAfter = exitRule.delay(entries[index].history) }
      // Later (the usual case): the element in force stays, a lower bound.
      if entries[index].stamp == 0 || entries[index].deadline < entries[index].queuedDeadline { queue(index) }
    }
    unqueued.removeAll(keepingCapacity: true)
    if deadlines.needsRebuild(live: entries.count) { rebuildDeadlines() }
  }

  /// Gives the entry at `index` an element with its own deadline, in force from now on.
  mutating func queue(_ index: Int) {
    let deadline = entries[index].deadline
    entries[index].stamp = deadlines.push(deadline, index)
    entries[index].queuedDeadline = deadline
  }

  /// Refills `deadlines` with one element per entry; every deadline must be queued.
  mutating func rebuildDeadlines() {
    let stamps = deadlines.rebuild(entries.indices.map { (entries[$0].deadline, $0) })
    for (index, stamp) in zip(entries.indices, stamps) {
      entries[index].stamp = stamp
      entries[index].queuedDeadline = entries[index].deadline
    }
  }

  /// How many elements the deadline heap holds (tests: bounded by the beacons in range).
  var deadlineHeapCount: Int { deadlines.count }
}
