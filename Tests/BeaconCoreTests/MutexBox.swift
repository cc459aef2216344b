import Synchronization

final class MutexBox<Value: Sendable>: Sendable {
  private let mutex: Mutex<Value>
  init(_ value: Value) { mutex = Mutex(value) }
  var value: Value { mutex.withLock { $0 } }
  func mutate(_ body: (inout Value) -> Void) { mutex.withLock { body(&$0) } }
}
