/// The bridge's outbound queue: tagged batches waiting for their post, in order.
///
/// With a `QueueJournal` (the daemon's store) the batches stay in the journal: the lane keeps
/// only counts (the total, and per trip what is queued and what waits for the trip's end) and a
/// window of the keys due next, read from the journal when it runs out. Without one, it keeps the
/// batches themselves: a queue of due batches, and per trip the batches waiting for its end.
/// Every step costs O(1) (amortized) or O(a trip's batches), never a scan of the queue.
struct OutboundLane: Sendable {
  /// Batches queued, due or waiting.
  private(set) var total = 0
  /// Batches waiting for their trip's end, over all trips.
  private(set) var waitingTotal = 0
  private var queuedByTrip: [TripID: Int] = [:]
  private var waitingByTrip: [TripID: Int] = [:]

  // In memory (no `QueueJournal`).
  private var due: [TaggedTripBatch] = []
  private var dueHead = 0
  private var waitingBatches: [TripID: [TaggedTripBatch]] = [:]

  // With a `QueueJournal`: the keys read ahead, due next.
  var window: [QueuedBatchKey] = []
  var windowHead = 0

  /// Batches due now (queued, not waiting for a trip's end).
  var dueCount: Int { total - waitingTotal }

  func queued(_ tripId: TripID) -> Int { queuedByTrip[tripId, default: 0] }
  func waiting(_ tripId: TripID) -> Int { waitingByTrip[tripId, default: 0] }
  /// Trips with batches waiting for their end.
  var waitingTrips: [TripID] { Array(waitingByTrip.keys) }

  /// Counts a batch in; in memory, keeps it too (`keep`).
  mutating func enqueue(_ batch: TaggedTripBatch, due isDue: Bool, keep: Bool) {
    count(batch.tripId, queued: 1, waiting: isDue ? 0 : 1)
    guard keep else { return }
    if isDue { due.append(batch) } else { waitingBatches[batch.tripId, default: []].append(batch) }
  }

  /// Counts in what a journal kept queued (`JournaledTrip.queued`, `.waiting`).
  mutating func restore(_ tripId: TripID, queued: Int, waiting: Int) {
    count(tripId, queued: queued, waiting: waiting)
  }

  /// A trip's waiting batches become due, after every batch due before them.
  mutating func makeDue(_ tripId: TripID) {
    guard let n = waitingByTrip.removeValue(forKey: tripId) else { return }
    waitingTotal -= n
    if let batches = waitingBatches.removeValue(forKey: tripId) { due += batches }
  }

  /// The next due batch kept in memory.
  var nextInMemory: TaggedTripBatch? { dueHead < due.count ? due[dueHead] : nil }

  /// The next due batch's key from the window read ahead.
  var nextInWindow: QueuedBatchKey? { windowHead < window.count ? window[windowHead] : nil }

  /// The head batch left the queue (delivered or dead-lettered).
  mutating func removeHead(_ tripId: TripID, inMemory: Bool) {
    if inMemory {
      dueHead += 1
      // The consumed prefix goes once it is half the array: O(1) amortized.
      if dueHead >= 64, dueHead * 2 >= due.count {
        due.removeFirst(dueHead)
        dueHead = 0
      }
    } else {
      windowHead += 1
    }
    count(tripId, queued: -1, waiting: 0)
  }

  mutating func refill(_ keys: [QueuedBatchKey]) {
    window = keys
    windowHead = 0
  }

  private mutating func count(_ tripId: TripID, queued: Int, waiting: Int) {
    total += queued
    waitingTotal += waiting
    let q = queuedByTrip[tripId, default: 0] + queued
    queuedByTrip[tripId] = q > 0 ? q : nil
    if waiting != 0 {
      let w = waitingByTrip[tripId, default: 0] + waiting
      waitingByTrip[tripId] = w > 0 ? w : nil
    }
  }
}
