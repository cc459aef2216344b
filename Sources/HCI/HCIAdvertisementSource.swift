import BeaconCore
import Dispatch
import HCIParsing
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// An `AdvertisementSource` over a raw HCI socket: scans without bluetoothd.
///
/// A dedicated thread opens the adapter, starts the scan (`ScanSession`), and reads events in
/// batches: it waits for the first, lets more queue for `batchMilliseconds`, then drains them
/// all with one wake-up. Cancelling the consumer stops the thread, which turns scanning off
/// again if it turned it on.
public struct HCIAdvertisementSource: AdvertisementSource {
  public let configuration: HCIScanConfiguration
  /// Opens the transport; the real socket by default, a scripted controller in tests.
  let open: @Sendable (UInt16) throws(HCIScanError) -> any HCITransport
  /// True when no reader thread runs (set again when the last one has restored the controller).
  private let done = Flag()

  final class Flag: Sendable {
    private let value = Mutex(true)
    func withLock<T>(_ body: (inout Bool) -> T) -> T { value.withLock { body(&$0) } }
  }

  public init(configuration: HCIScanConfiguration = HCIScanConfiguration()) {
    self.configuration = configuration
    self.open = { adapter throws(HCIScanError) in try HCISocket(adapter: adapter) }
  }

  init(
    configuration: HCIScanConfiguration,
    open: @escaping @Sendable (UInt16) throws(HCIScanError) -> any HCITransport
  ) {
    self.configuration = configuration
    self.open = open
  }

  public var description: String {
    "hci (raw HCI on hci\(configuration.adapter), \(configuration.parameters.active ? "active" : "passive") scan)"
  }

  /// Starts the reader thread, calls `started`, and hands on each event as it is decoded; a
  /// failure to open the adapter or start the scan is thrown from here.
  public func run(
    isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
  ) async throws {
    let events = startReader()
    started()
    for try await event in events { await deliver([event]) }
  }

  /// The reader thread's events; cancelling their consumer stops the thread.
  private func startReader() -> AsyncThrowingStream<SourceEvent, any Error> {
    let (stream, continuation) = AsyncThrowingStream.makeStream(
      of: SourceEvent.self, throwing: (any Error).self)
    let stop = StopFlag()
    continuation.onTermination = { _ in stop.set() }
    let configuration = self.configuration
    let open = self.open
    let thread = DispatchQueue(label: "beaconbridge.hci\(configuration.adapter)")
    let done = done
    done.withLock { $0 = false }
    thread.async {
      Self.run(configuration: configuration, open: open, stop: stop, continuation: continuation)
      done.withLock { $0 = true }
    }
    return stream
  }

  /// Waits until the reader thread has restored the controller and closed the socket.
  public func finished() async {
    while !done.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
  }

  static func run(
    configuration: HCIScanConfiguration, open: (UInt16) throws(HCIScanError) -> any HCITransport,
    stop: StopFlag, continuation: AsyncThrowingStream<SourceEvent, any Error>.Continuation
  ) {
    let transport: any HCITransport
    do { transport = try open(configuration.adapter) } catch {
      continuation.finish(throwing: error)
      return
    }
    let session = ScanSession(transport: transport, configuration: configuration)
    var decoder = ReportDecoder()
    do {
      try session.start()
      for packet in session.drainPending() {
        for event in decoder.decode(packet) { continuation.yield(event) }
      }
      while !stop.isSet {
        let packets = try transport.receive(timeoutMilliseconds: 250)
        for packet in packets { for event in decoder.decode(packet) { continuation.yield(event) } }
        if !packets.isEmpty && configuration.batchMilliseconds > 0 {
          // Let the next batch queue in the socket (sized for it) rather than waking per report.
          stop.wait(milliseconds: configuration.batchMilliseconds)
        }
      }
      session.stop()
      continuation.finish()
    } catch {
      session.stop()
      continuation.finish(throwing: error)
    }
  }
}

/// Set once from any thread when the consumer goes away; the reader thread checks it.
final class StopFlag: Sendable {
  private let flag = Atomic<Bool>(false)
  var isSet: Bool { flag.load(ordering: .acquiring) }
  func set() { flag.store(true, ordering: .releasing) }

  /// Sleeps up to `milliseconds`, waking early when set.
  func wait(milliseconds: Int) {
    var left = milliseconds
    while left > 0 && !isSet {
      let step = min(left, 20)
      usleep(UInt32(step * 1000))
      left -= step
    }
  }
}
