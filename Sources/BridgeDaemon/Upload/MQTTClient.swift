import BeaconCore
import CMosquitto
import DBus
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `MQTTSink`'s connection: one libmosquitto client (MQTT 5) per configuration, kept connected by a thread
/// of its own, publishing each batch with QoS 1. A batch counts as delivered only on its PUBACK.
///
/// The session is persistent: clean start off, the configured session expiry, and a fixed client
/// ID, so in-flight messages survive a reconnect. libmosquitto's own reconnect drops the CONNECT
/// properties (the session expiry), so the client thread reconnects itself with
/// `mosquitto_connect_bind_v5`, backing off from 1 s to 30 s. While it is not connected a publish
/// fails at once (the batch waits in the outbox with the bridge's backoff), and the reason names
/// what the broker said (a refused CONNECT gives its reason code's text).
///
/// Nothing polls. The client thread sleeps in libmosquitto's `select` (woken by the socket, or by
/// a publish or DISCONNECT queued from another thread, which libmosquitto signals through its
/// socket pair) or in its backoff (woken by `stop`). A caller waits on a continuation that the
/// thread's callbacks resume: the PUBACK (`PublishOutcome`), the CONNACK, the thread's end; a
/// timer or the caller's cancellation resumes it otherwise. `stop` abandons every publish in
/// flight at once: its batch stays in the outbox and is sent again after the restart.
///
/// The fleet link (`FleetLink`) adds a session of its own: a last will, topics subscribed on every
/// connect (a persistent session keeps them too, but a broker that lost its store would not), a
/// hook run on every connect (the birth message), and a handler for the messages that arrive.
final class MQTTClient: @unchecked Sendable {
  /// What a connection carries besides publishing.
  struct Session: Sendable {
    /// Published by the broker, retained, when the connection ends without a DISCONNECT.
    var will: (topic: String, payload: [UInt8])?
    var subscriptions: [String] = []
    /// Called on the client thread after each CONNACK that accepted, after subscribing.
    var onConnect: (@Sendable (MQTTClient) -> Void)?
    /// Called on the client thread for each message; must not block.
    var onMessage: (@Sendable (MQTTIncoming) -> Void)?
    /// Called on the client thread when the connection ends, with why.
    var onDisconnect: (@Sendable (String) -> Void)?
    /// The largest packet the broker may send (MQTT 5 Maximum Packet Size): libmosquitto holds
    /// a whole message in memory, so a subscriber bounds it.
    var maximumPacketSize: UInt32?
  }

  /// What became of one QoS 1 publish.
  enum PublishOutcome: Equatable, Sendable {
    /// The broker's PUBACK, with a success reason code.
    case acknowledged
    /// The broker's PUBACK, with a failure reason code (0x80 and up).
    case refused(reasonCode: Int32)
    /// Not sent: not connected within the wait, with why (the broker's refusal, the socket's
    /// error).
    case notConnected(String)
    /// Not sent: libmosquitto refused to queue it, with why.
    case notQueued(String)
    /// Given up without an answer: the client stopped (the daemon stops) or the caller was
    /// cancelled. The message may have reached the broker; its batch stays in the outbox.
    case abandoned
    /// No PUBACK within the timeout.
    case timedOut
  }

  let settings: MQTTSettings
  private let session: Session
  private let handle: OpaquePointer

  /// What a caller waits for, resumed by the client thread's callbacks.
  private enum Awaited {
    case puback(Int32)
    case connection
    case finish
  }
  private enum Answer {
    case done(Int32)
    case timedOut
    case abandoned
  }
  private struct Waiter {
    var awaited: Awaited
    var continuation: CheckedContinuation<Answer, Never>
    var timer: Task<Void, Never>?
  }

  private struct State {
    var connected = false
    var stopped = false
    /// A DISCONNECT was queued (by `stop`, or by the thread as it ends).
    var disconnecting = false
    /// The client thread has sent its DISCONNECT (or given up) and ended.
    var finished = false
    var lastError = "not connected yet"
    var nextWaiter = 0
    var waiters: [Int: Waiter] = [:]
    /// The waiter of each message ID in flight.
    var pubacks: [Int32: Int] = [:]
    /// PUBACK reason codes that came before their waiter.
    var early: [Int32: Int32] = [:]
    /// Messages sent without a waiter (`send`): their PUBACKs are dropped.
    var unwaited: Set<Int32> = []

    /// The answer a new waiter gets at once, if any.
    mutating func ready(_ awaited: Awaited) -> Answer? {
      switch awaited {
      case .puback(let mid):
        if let reason = early.removeValue(forKey: mid) { return .done(reason) }
        return stopped ? .abandoned : nil
      case .connection:
        if connected { return .done(0) }
        return stopped ? .abandoned : nil
      case .finish:
        return finished ? .done(0) : nil
      }
    }

    /// Takes the waiters `matching`, for resuming outside the lock.
    mutating func take(_ matching: (Awaited) -> Bool) -> [Waiter] {
      let ids = waiters.filter { matching($0.value.awaited) }.map(\.key)
      return ids.compactMap { id in
        let waiter = waiters.removeValue(forKey: id)
        if case .puback(let mid)? = waiter?.awaited { pubacks[mid] = nil }
        return waiter
      }
    }
  }
  private let state = Mutex(State())
  /// The backoff between connection attempts, cut short by `stop`.
  private let backoff = ThreadPause()
  /// libmosquitto's functions, loaded on first use (`bb_mosquitto`).
  private let api: bb_mosquitto_api

  init(_ settings: MQTTSettings, session: Session = Session()) throws(RetryablePostFailure) {
    self.settings = settings
    self.session = session
    var problem: UnsafePointer<CChar>?
    guard let loaded = bb_mosquitto(&problem) else {
      throw RetryablePostFailure(
        "MQTT: \(problem.map { String(cString: $0) } ?? "libmosquitto is not usable")")
    }
    api = loaded.pointee
    guard let handle = api.new(settings.clientId, false, nil) else {
      throw RetryablePostFailure("MQTT: cannot make a libmosquitto client")
    }
    self.handle = handle
    _ = api.threaded_set(handle, true)
    _ = api.int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, 5)
    if settings.tls {
      let files = settings.tlsFiles
      let rc = api.tls_set(
        handle, files.caFile ?? "/etc/ssl/certs/ca-certificates.crt", nil, files.certFile,
        files.keyFile ?? files.certFile, nil)
      guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        api.destroy(handle)
        throw RetryablePostFailure("MQTT: the TLS files were refused: \(text(rc))")
      }
    }
    if let will = session.will {
      // The corresponding C function is `mosquitto_will_set_v5`; the will stays set for every
      // reconnect.
      let rc = will.payload.withUnsafeBytes { bytes in
        api.will_set_v5(handle, will.topic, Int32(bytes.count), bytes.baseAddress, 1, true, nil)
      }
      guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        api.destroy(handle)
        throw RetryablePostFailure("MQTT: the last will was refused: \(text(rc))")
      }
    }
    api.user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
    api.message_v5_callback_set(handle) { _, context, message, _ in
      guard let message else { return }
      MQTTClient.from(context).received(message.pointee)
    }
    api.connect_v5_callback_set(handle) { _, context, rc, _, _ in
      MQTTClient.from(context).connected(rc)
    }
    api.disconnect_v5_callback_set(handle) { _, context, rc, _ in
      MQTTClient.from(context).disconnected(rc)
    }
    api.publish_v5_callback_set(handle) { _, context, mid, reason, _ in
      MQTTClient.from(context).acknowledged(mid, reason)
    }
    // The thread holds the client until it is stopped.
    guard OSThread.start({ [self] in run() }) == 0 else {
      api.destroy(handle)
      throw RetryablePostFailure("MQTT: no thread for the client")
    }
  }

  deinit { api.destroy(handle) }

  private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTClient {
    Unmanaged<MQTTClient>.fromOpaque(context!).takeUnretainedValue()
  }

  static func string(_ text: UnsafePointer<CChar>?) -> String { text.map { String(cString: $0) } ?? "?" }

  func text(_ rc: Int32) -> String { Self.string(api.strerror(rc)) }

  /// Stops the client: every publish in flight and every wait for the connection is abandoned at
  /// once, the backoff is cut short, and a connected client queues its DISCONNECT, which wakes
  /// the thread's `select`; the thread writes it, closes the socket and releases the client.
  func stop() {
    let (waiters, disconnect) = state.withLock { state -> ([Waiter], Bool) in
      state.stopped = true
      let disconnect = state.connected && !state.disconnecting
      if disconnect { state.disconnecting = true }
      return (state.take { if case .finish = $0 { false } else { true } }, disconnect)
    }
    for waiter in waiters {
      waiter.timer?.cancel()
      waiter.continuation.resume(returning: .abandoned)
    }
    backoff.wake()
    if disconnect { _ = api.disconnect(handle) }
  }

  /// Stops the client and waits (at most `seconds`) until its thread has sent its DISCONNECT:
  /// a process that exits before then leaves the broker a dropped socket, and the last will.
  func stopAndWait(seconds: Double = 3) async {
    stop()
    _ = await wait(for: .finish, timeout: seconds)
  }

  /// Waits for `awaited`: the client thread's callback, `stop`, the timeout (if any) or the
  /// caller's cancellation answers, whichever comes first; each waiter is answered once.
  private func wait(for awaited: Awaited, timeout: Double?) async -> Answer {
    let id = state.withLock { state in
      state.nextWaiter += 1
      return state.nextWaiter
    }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
        let now = state.withLock { state -> Answer? in
          if let answer = state.ready(awaited) { return answer }
          // A cancellation before this line finds no waiter: it is seen here instead.
          if Task.isCancelled { return .abandoned }
          state.waiters[id] = Waiter(awaited: awaited, continuation: continuation)
          if case .puback(let mid) = awaited { state.pubacks[mid] = id }
          return nil
        }
        if let now {
          continuation.resume(returning: now)
          return
        }
        if let timeout {
          let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))) != nil else { return }
            self?.answer(id, .timedOut)
          }
          state.withLock { $0.waiters[id]?.timer = timer }
        }
      }
    } onCancel: {
      answer(id, .abandoned)
    }
  }

  private func answer(_ id: Int, _ answer: Answer) {
    let waiter = state.withLock { state -> Waiter? in
      guard let waiter = state.waiters.removeValue(forKey: id) else { return nil }
      if case .puback(let mid) = waiter.awaited { state.pubacks[mid] = nil }
      return waiter
    }
    waiter?.timer?.cancel()
    waiter?.continuation.resume(returning: answer)
  }

  /// The client thread: connect (with the CONNECT properties every time), run the network loop,
  /// and reconnect with backoff when the connection ends.
  private func run() {
    var delay = 1.0
    while !state.withLock({ $0.stopped }) {
      var properties: OpaquePointer?
      _ = api.property_add_int32(
        &properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), UInt32(settings.sessionExpiry))
      if let maximum = session.maximumPacketSize {
        _ = api.property_add_int32(&properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maximum)
      }
      if let username = settings.username {
        var password: String?
        if let file = settings.passwordFile {
          do { password = try TokenFile.read(file) } catch {
            state.withLock { $0.lastError = "the password file is refused: \(error.description)" }
            api.property_free_all(&properties)
            backoff.sleep(seconds: delay)
            delay = min(delay * 2, 30)
            continue
          }
        }
        _ = api.username_pw_set(handle, username, password)
      }
      let rc = api.connect_bind_v5(
        handle, settings.host, Int32(settings.port), Int32(settings.keepAlive), nil, properties)
      api.property_free_all(&properties)
      if rc != MOSQ_ERR_SUCCESS.rawValue {
        let reason = rc == MOSQ_ERR_ERRNO.rawValue ? SystemError.words(errno) : text(rc)
        state.withLock { $0.lastError = "cannot connect to \(settings.host):\(settings.port): \(reason)" }
        backoff.sleep(seconds: delay)
        delay = min(delay * 2, 30)
        continue
      }
      // libmosquitto's own wait: `select` on the socket and on the pair its other threads' calls
      // write to; the timeout only paces its keep-alive checks.
      while !state.withLock({ $0.stopped }) {
        let rc = api.loop(handle, 1000, 1)
        if rc != MOSQ_ERR_SUCCESS.rawValue {
          state.withLock {
            $0.connected = false
            if $0.lastError.isEmpty { $0.lastError = "connection lost: \(text(rc))" }
          }
          break
        }
        if state.withLock({ $0.connected }) { delay = 1 }
      }
      if state.withLock({ $0.stopped }) { break }
      backoff.sleep(seconds: delay)
      delay = min(delay * 2, 30)
    }
    // With the client threaded externally, the DISCONNECT is only queued: the loop writes it
    // and closes the socket (a loop that fails has nothing left to write). Without it the
    // broker would see the socket close and publish the last will, as for a box that vanished.
    let disconnect = state.withLock { state -> Bool in
      defer { state.disconnecting = true }
      return !state.disconnecting
    }
    if !disconnect || api.disconnect(handle) == MOSQ_ERR_SUCCESS.rawValue {
      var rounds = 0
      while rounds < 20, api.loop(handle, 50, 1) == MOSQ_ERR_SUCCESS.rawValue { rounds += 1 }
    }
    let waiters = state.withLock { state in
      state.finished = true
      state.connected = false
      return state.take { _ in true }
    }
    for waiter in waiters {
      waiter.timer?.cancel()
      if case .finish = waiter.awaited {
        waiter.continuation.resume(returning: .done(0))
      } else {
        waiter.continuation.resume(returning: .abandoned)
      }
    }
  }

  private func connected(_ rc: Int32) {
    let waiters = state.withLock { state -> [Waiter] in
      if rc == 0 {
        state.connected = true
        state.lastError = ""
        return state.take { if case .connection = $0 { true } else { false } }
      }
      state.connected = false
      state.lastError = "the broker refused the connection: \(Self.string(api.reason_string(rc)))"
      return []
    }
    guard rc == 0 else { return }
    for topic in session.subscriptions {
      let result = api.subscribe_v5(handle, nil, topic, 1, 0, nil)
      if result != MOSQ_ERR_SUCCESS.rawValue {
        state.withLock { $0.lastError = "cannot subscribe to \(topic): \(text(result))" }
      }
    }
    session.onConnect?(self)
    for waiter in waiters {
      waiter.timer?.cancel()
      waiter.continuation.resume(returning: .done(0))
    }
  }

  /// The largest message handed on; a bigger one arrives as `oversized` with no payload.
  static let maxIncomingBytes = 2 << 20

  private func received(_ message: mosquitto_message) {
    guard let handler = session.onMessage else { return }
    let topic = message.topic.map { String(cString: $0) } ?? ""
    let count = Int(message.payloadlen)
    guard count <= Self.maxIncomingBytes else {
      handler(MQTTIncoming(topic: topic, payload: [], oversized: true, retained: message.retain))
      return
    }
    let payload =
      message.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: max(0, count))) } ?? []
    handler(MQTTIncoming(topic: topic, payload: payload, oversized: false, retained: message.retain))
  }

  /// Queues a QoS 1 publish without waiting for its PUBACK: for the client thread's own hooks
  /// (the birth message), where waiting would stall the loop that reads the PUBACK.
  @discardableResult
  func send(topic: String, payload: [UInt8], retain: Bool) -> Bool {
    var mid: Int32 = 0
    let rc = payload.withUnsafeBytes { bytes in
      api.publish_v5(handle, &mid, topic, Int32(bytes.count), bytes.baseAddress, 1, retain, nil)
    }
    guard rc == MOSQ_ERR_SUCCESS.rawValue else { return false }
    state.withLock { state in
      // A PUBACK that came before this line is in `early`.
      if state.early.removeValue(forKey: mid) == nil { state.unwaited.insert(mid) }
    }
    return true
  }

  private func disconnected(_ rc: Int32) {
    let reason = state.withLock {
      $0.connected = false
      if $0.lastError.isEmpty { $0.lastError = "disconnected (\(text(rc)))" }
      return $0.lastError
    }
    session.onDisconnect?(reason)
  }

  private func acknowledged(_ mid: Int32, _ reason: Int32) {
    let waiter = state.withLock { state -> Waiter? in
      if let id = state.pubacks.removeValue(forKey: mid) { return state.waiters.removeValue(forKey: id) }
      if state.unwaited.remove(mid) != nil { return nil }
      state.early[mid] = reason
      return nil
    }
    waiter?.timer?.cancel()
    waiter?.continuation.resume(returning: .done(reason))
  }

  /// Publishes one payload with QoS 1 and says what became of it. It waits for the connection
  /// (at most `min(timeout, 5)` s: the first publish after start), then for the PUBACK (at most
  /// `timeout`, by default `[Upload] Timeout`); `stop` or the caller's cancellation abandons it.
  func publish(
    topic: String, payload: [UInt8], key: String?, retain: Bool = false, timeout: Double? = nil
  ) async -> PublishOutcome {
    let timeout = timeout ?? settings.timeout
    switch await wait(for: .connection, timeout: min(timeout, 5)) {
    case .done: break
    case .abandoned: return .abandoned
    case .timedOut: return .notConnected(state.withLock { $0.lastError })
    }
    var properties: OpaquePointer?
    if let key {
      _ = api.property_add_string_pair(
        &properties, Int32(MQTT_PROP_USER_PROPERTY.rawValue), "Idempotency-Key", key)
    }
    defer { api.property_free_all(&properties) }
    var mid: Int32 = 0
    let rc = payload.withUnsafeBytes { bytes in
      api.publish_v5(handle, &mid, topic, Int32(bytes.count), bytes.baseAddress, 1, retain, properties)
    }
    guard rc == MOSQ_ERR_SUCCESS.rawValue else { return .notQueued(text(rc)) }
    switch await wait(for: .puback(mid), timeout: timeout) {
    case .done(let reason) where reason < 0x80: return .acknowledged
    case .done(let reason): return .refused(reasonCode: reason)
    case .abandoned:
      // A PUBACK that comes later is dropped, not kept for a waiter that will never come.
      state.withLock { state in
        if state.early.removeValue(forKey: mid) == nil { state.unwaited.insert(mid) }
      }
      return .abandoned
    case .timedOut:
      state.withLock { state in
        if state.early.removeValue(forKey: mid) == nil { state.unwaited.insert(mid) }
      }
      return .timedOut
    }
  }

  /// `publish` for a caller that retries: anything but the PUBACK is a retryable failure that
  /// names the broker and why.
  func publishOrThrow(topic: String, payload: [UInt8], key: String?, retain: Bool = false)
    async throws(RetryablePostFailure)
  {
    let broker = "MQTT broker \(settings.host):\(settings.port)"
    switch await publish(topic: topic, payload: payload, key: key, retain: retain) {
    case .acknowledged: return
    case .refused(let reason):
      throw RetryablePostFailure("\(broker) refused the message: \(Self.string(api.reason_string(reason)))")
    case .notConnected(let why): throw RetryablePostFailure("not sent: \(broker) is not connected: \(why)")
    case .notQueued(let why): throw RetryablePostFailure("not sent: \(broker): \(why)")
    case .abandoned:
      throw RetryablePostFailure("\(broker): the publish was abandoned before its PUBACK: the daemon stops")
    case .timedOut: throw RetryablePostFailure("no PUBACK from \(broker) within \(settings.timeout) s")
    }
  }
}

/// A pause on a plain thread that another thread can cut short (the client's backoff, which
/// `stop` ends at once).
final class ThreadPause: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  /// Guarded by `mutex`.
  private var woken = false

  init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  /// Sleeps `seconds`, or until `wake` (which also ends every later sleep at once).
  func sleep(seconds: Double) {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let nanoseconds = Int(now.tv_nsec) + Int((seconds - seconds.rounded(.down)) * 1e9)
    var until = timespec(
      tv_sec: now.tv_sec + Int(seconds) + nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
    pthread_mutex_lock(mutex)
    while !woken {
      if pthread_cond_timedwait(condition, mutex, &until) == ETIMEDOUT { break }
    }
    pthread_mutex_unlock(mutex)
  }

  func wake() {
    pthread_mutex_lock(mutex)
    woken = true
    pthread_cond_broadcast(condition)
    pthread_mutex_unlock(mutex)
  }
}

/// A message the broker delivered to a subscription.
struct MQTTIncoming: Sendable {
  var topic: String
  var payload: [UInt8]
  /// Over `MQTTClient.maxIncomingBytes`: the payload is left out.
  var oversized: Bool
  var retained: Bool
}
