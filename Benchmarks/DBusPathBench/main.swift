// `make bench-check`, D-Bus part: the daemon's scan path (SignalSocket, the Device1 fast decoder,
// the device mirror, the BlueZ source's batches, then BeaconPipeline) in a process whose main
// thread is not a Swift async main, so that valgrind 3.19 can run it (it dies in libdispatch's
// `_dispatch_sigsuspend` once an async main parks; see scripts/leakcheck.sh).
//
//   DBusPathBench BUS_ADDRESS COUNT
//
// Connects to BUS_ADDRESS's org.bluez (the bench's C emitter), prints "ready" once discovery
// runs, then consumes until COUNT sightings went through the pipeline, prints "done COUNT" and
// exits. Benchmarks/instructions.py runs it under callgrind for two counts; the slope is the cost
// of one advertisement.

import BeaconCore
import BlueZ
import DBus
import Foundation
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]), count >= 0 else {
  FileHandle.standardError.write(Data("usage: DBusPathBench BUS_ADDRESS COUNT\n".utf8))
  exit(2)
}
let address = arguments[1]

/// One line on stdout, unbuffered (the driver waits for it).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let finished = DispatchSemaphore(value: 0)
let outcome = Mutex<Int32>(0)

/// The consumer, as `BeaconBridge.consume(source:)` is one: an actor the source runs on
/// (`AdvertisementSource.run(isolation:)`), ingesting each batch in the job that delivered it.
actor Consumer {
  @exclusivity(unchecked) var pipeline = BeaconPipeline(pairings: PairingSet([]))
  var sightings = 0
  let clock = BridgeClock(ContinuousClock())

  func consume(_ source: BlueZAdvertisementSource, count: Int) async throws {
    let scan = Task {
      try await source.run(isolation: self) {
        say("ready")
        if count == 0 { withUnsafeCurrentTask { $0?.cancel() } }
      } deliver: { batch in
        // As the bridge does: one clock reading per batch.
        let time = clock.now()
        batch.withUnsafeBufferPointer { events in
          // As the bridge does: in place, through `ingest(_:from:at:)`. Every event counts: in
          // this stream each is a sighting.
          let wanted = UnsafeBufferPointer(rebasing: events[..<max(0, min(events.count, count - sightings))])
          var index = 0
          while index < wanted.count { _ = pipeline.ingest(wanted, from: &index, at: time) }
          sightings += wanted.count
        }
        // Enough: cancelling ends `run` once this batch is handed back.
        if sightings >= count { withUnsafeCurrentTask { $0?.cancel() } }
      }
    }
    try await scan.value
  }
}

Task.detached {
  let source = BlueZAdvertisementSource(bus: .address(address), adapter: "hci0")
  let consumer = Consumer()
  do {
    try await consumer.consume(source, count: count)
    say("done \(await consumer.sightings)")
  } catch {
    FileHandle.standardError.write(Data("DBusPathBench: \(error)\n".utf8))
    outcome.withLock { $0 = 1 }
  }
  finished.signal()
}
finished.wait()
exit(outcome.withLock { $0 })
