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

  let settings: MQTTSettings
  private let session: Session
  private let handle: OpaquePointer
  private struct State {
    var connected = false
    var stopped = false
    /// The client thread has sent its DISCONNECT (or given up) and ended.
    var finished = false
    var lastError = "not connected yet"
    /// PUBACKs by message ID: a waiter, or a reason code that came before its waiter.
    var waiters: [Int32: CheckedContinuation<Int32, Never>] = [:]
    var early: [Int32: Int32] = [:]
    /// Messages sent without a waiter (`send`): their PUBACKs are dropped.
    var unwaited: Set<Int32> = []
  }
  private let state = Mutex(State())
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

  /// Stops the client thread; it disconnects and releases the client.
  func stop() { state.withLock { $0.stopped = true } }

  /// Stops the client thread and waits (at most `seconds`) until it has sent its DISCONNECT:
  /// a process that exits before then leaves the broker a dropped socket, and the last will.
  func stopAndWait(seconds: Double = 3) async {
    stop()
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !state.withLock({ $0.finished }), ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
  }

  /// The client thread: connect (with the CONNECT properties every time), run the network loop,
  /// and reconnect with backoff when the connection ends.
  private func run() {
    var delay: UInt32 = 1
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
            sleep(delay)
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
        sleep(delay)
        delay = min(delay * 2, 30)
        continue
      }
      while !state.withLock({ $0.stopped }) {
        let rc = api.loop(handle, 500, 1)
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
      sleep(delay)
      delay = min(delay * 2, 30)
    }
    // With the client threaded externally, the DISCONNECT is only queued: the loop writes it
    // (and closes the socket). Without it the broker would see the socket close and publish the
    // last will, as for a box that vanished.
    if api.disconnect(handle) == MOSQ_ERR_SUCCESS.rawValue {
      for _ in 0..<20 {
        guard api.loop(handle, 50, 1) == MOSQ_ERR_SUCCESS.rawValue else { break }
      }
    }
    // Waiters left get a failure; nothing more will be acknowledged.
    let waiters = state.withLock { state in
      defer { state.waiters = [:] }
      return state.waiters
    }
    for waiter in waiters.values { waiter.resume(returning: -1) }
    state.withLock { $0.finished = true }
  }

  private func connected(_ rc: Int32) {
    state.withLock {
      if rc == 0 {
        $0.connected = true
        $0.lastError = ""
      } else {
        $0.connected = false
        $0.lastError = "the broker refused the connection: \(Self.string(api.reason_string(rc)))"
      }
    }
    guard rc == 0 else { return }
    for topic in session.subscriptions {
      let result = api.subscribe_v5(handle, nil, topic, 1, 0, nil)
      if result != MOSQ_ERR_SUCCESS.rawValue {
        state.withLock { $0.lastError = "cannot subscribe to \(topic): \(text(result))" }
      }
    }
    session.onConnect?(self)
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
    let waiter = state.withLock { state -> CheckedContinuation<Int32, Never>? in
      if let waiter = state.waiters.removeValue(forKey: mid) { return waiter }
      if state.unwaited.remove(mid) != nil { return nil }
      state.early[mid] = reason
      return nil
    }
    waiter?.resume(returning: reason)
  }

  /// Waits up to `seconds` for the connection (the first publish after start), and says why not.
  private func waitForConnection(_ seconds: Double) async -> String? {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while true {
      let (connected, error) = state.withLock { ($0.connected, $0.lastError) }
      if connected { return nil }
      if ContinuousClock.now >= deadline || Task.isCancelled { return error }
      try? await Task.sleep(for: .milliseconds(20))
    }
  }

  /// Publishes one payload with QoS 1 and returns when its PUBACK came; throws a retryable
  /// failure when not connected, when the broker's PUBACK is a failure, or after `timeout`.
  func publish(topic: String, payload: [UInt8], key: String?, retain: Bool = false)
    async throws(RetryablePostFailure)
  {
    let broker = "MQTT broker \(settings.host):\(settings.port)"
    if let reason = await waitForConnection(min(settings.timeout, 5)) {
      throw RetryablePostFailure("not sent: \(broker) is not connected: \(reason)")
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
    guard rc == MOSQ_ERR_SUCCESS.rawValue else {
      throw RetryablePostFailure("not sent: \(broker): \(text(rc))")
    }
    let timeout = settings.timeout
    let message = mid
    let reason: Int32 = await withCheckedContinuation { continuation in
      let early = state.withLock { state -> Int32? in
        if let reason = state.early.removeValue(forKey: message) { return reason }
        state.waiters[message] = continuation
        return nil
      }
      if let early {
        continuation.resume(returning: early)
        return
      }
      Task { [self] in
        try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
        let waiter = state.withLock { $0.waiters.removeValue(forKey: message) }
        waiter?.resume(returning: -2)
      }
    }
    switch reason {
    case 0..<0x80: return
    case -2: throw RetryablePostFailure("no PUBACK from \(broker) within \(timeout) s")
    case -1: throw RetryablePostFailure("\(broker): the client stopped before the PUBACK")
    default:
      throw RetryablePostFailure(
        "\(broker) refused the message: \(Self.string(api.reason_string(reason)))")
    }
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
