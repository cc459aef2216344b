import BeaconCore

/// The bridge's posting task (`BeaconBridge.startPosting`), stopped with the other services: no
/// trip call and no deadline waits for a post. It is started before the bridge is armed, so that
/// the batches a restart finds queued are posted on it too, never by `start`.
struct PostingService: Service {
  let posting: Task<Void, Never>
  func run() async throws {
    await withTaskCancellationHandler {
      await posting.value
    } onCancel: {
      posting.cancel()
    }
  }
}
