import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The reader thread as a task executor: a task that prefers it (`withTaskExecutorPreference`)
/// runs its jobs, and those of a default actor it calls into, on this thread, between reads.
///
/// A scan's session and its consumer then run in the same pass as the read that fed them: the
/// thread that frames a batch resumes the consumer, whose job is queued here and run before the
/// thread waits again. No other thread wakes per batch (each hand-over to the global pool
/// costs about as much as a batch's own work).
///
/// Jobs that arrive from other threads wake the reader through its pipe. Once the reader has
/// stopped, jobs go to the global concurrent executor, so that a task still preferring it never
/// hangs.
extension SignalSocketReader: TaskExecutor {
  /// What the reader's job queue holds, and whether the thread waits in `poll` (to be woken).
  struct JobQueue {
    var jobs: [UnownedJob] = []
    var parked = false
    var accepting = true
    var thread: pthread_t?
  }

  @usableFromInline func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let accepted = queue.withLock { queue -> Bool in
      guard queue.accepting else { return false }
      queue.jobs.append(job)
      if queue.parked {
        queue.parked = false
        ring(queue)
      }
      return true
    }
    if !accepted { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
  }

  /// Wakes the thread from `poll`: to stop, or to run a job. Under the queue's lock, which
  /// `closeQueue` closes the pipe under, so that a late caller never writes to a closed (or
  /// reused) descriptor.
  func ring(_ queue: borrowing JobQueue) {
    guard queue.accepting else { return }
    var one: UInt8 = 1
    _ = write(wakeWriteFD, &one, 1)
  }

  func ring() { queue.withLock { ring($0) } }

  /// Runs the jobs queued so far (and those they queue), on the reader thread.
  func runJobs() {
    while true {
      let jobs = queue.withLock { queue -> [UnownedJob] in
        defer { queue.jobs.removeAll(keepingCapacity: true) }
        return queue.jobs
      }
      if jobs.isEmpty { return }
      for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
  }

  /// Marks the thread as waiting, unless jobs are queued: true if it may wait.
  func park() -> Bool {
    queue.withLock { queue in
      guard queue.jobs.isEmpty else { return false }
      queue.parked = true
      return true
    }
  }

  func unpark() { queue.withLock { $0.parked = false } }

  /// Takes no more jobs and closes the wake-up pipe; jobs still queued go to the global executor.
  func closeQueue() {
    let left = queue.withLock { queue -> [UnownedJob] in
      queue.accepting = false
      close(wakeFD)
      close(wakeWriteFD)
      defer { queue.jobs = [] }
      return queue.jobs
    }
    for job in left { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
  }

  /// Whether the caller is the reader thread (which must never wait for itself to stop).
  var onReaderThread: Bool {
    queue.withLock { queue in queue.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
  }
}
