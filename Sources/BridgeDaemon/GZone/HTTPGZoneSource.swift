import BeaconCore
import Foundation
import GZone

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The four G-Zone requests over HTTP: one GET per payload, a bearer token read from
/// `tokenFile` on every load (a rotated token needs no restart), and a hard deadline per request.
///
/// A status other than 2xx, a network error or a timeout fails that request, and so the load;
/// errors name the URL, redacted (never the token, credentials or secret parameters).
public struct HTTPGZoneSource: GZoneSource {
  public var configuration: GZoneConfiguration
  /// The token file when `[GZone]` names none (`[Upload] TokenFile`).
  public var fallbackTokenFile: String?
  public var timeout: Double

  public init(configuration: GZoneConfiguration, fallbackTokenFile: String? = nil, timeout: Double = 30) {
    self.configuration = configuration
    self.fallbackTokenFile = fallbackTokenFile
    self.timeout = timeout
  }

  /// The payload's URL as errors name it: redacted (no credentials, no secret parameters).
  public func origin(of payload: GZonePayload) -> String {
    configuration.url(for: payload).map { Redactor().redact($0) } ?? "[GZone] \(payload.rawValue)"
  }

  public func fetch(_ payload: GZonePayload) async throws -> Data {
    let origin = origin(of: payload)
    guard let text = configuration.url(for: payload), let url = URL(string: text) else {
      throw GZoneError(.unreadable, origin: origin, "no valid URL is configured")
    }
    var request = URLRequest(url: url, timeoutInterval: timeout)
    request.httpMethod = "GET"
    request.setValue("application/json", forHTTPHeaderField: "Accept")
    if let tokenFile = configuration.tokenFile ?? fallbackTokenFile {
      let token: String
      do { token = try TokenFile.read(tokenFile) } catch {
        throw GZoneError(.unreadable, origin: origin, "not requested: \(error.description)")
      }
      request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    }
    let (data, response) = try await Self.get(request, timeout: timeout, origin: origin)
    guard let http = response as? HTTPURLResponse else {
      throw GZoneError(.unreadable, origin: origin, "not an HTTP response")
    }
    guard (200..<300).contains(http.statusCode) else {
      throw GZoneError(.unreadable, origin: origin, "HTTP \(http.statusCode)")
    }
    return data
  }

  /// A data task with a hard deadline (as `HTTPUploader.send`: the async API was seen to hang
  /// past its timeout on swift-corelibs-foundation). Cancelling the calling task cancels it too.
  static func get(_ request: URLRequest, timeout: Double, origin: String) async throws -> (Data, URLResponse)
  {
    /// Resumes the continuation once, whichever comes first: the reply, the deadline, or
    /// cancellation (which may come before the continuation exists).
    final class Once: @unchecked Sendable {
      private let lock = NSLock()
      private var continuation: CheckedContinuation<(Data, URLResponse), any Error>?
      private var early: Result<(Data, URLResponse), any Error>?
      private var done = false
      private var task: URLSessionDataTask?
      func start(_ c: CheckedContinuation<(Data, URLResponse), any Error>, task: URLSessionDataTask) {
        lock.lock()
        if let early {
          lock.unlock()
          c.resume(with: early)
          return
        }
        continuation = c
        self.task = task
        lock.unlock()
        task.resume()
      }
      func finish(_ result: Result<(Data, URLResponse), any Error>) {
        lock.lock()
        guard !done else {
          lock.unlock()
          return
        }
        done = true
        guard let c = continuation else {
          early = result
          lock.unlock()
          return
        }
        continuation = nil
        let task = self.task
        lock.unlock()
        c.resume(with: result)
        // Only a running task: corelibs traps when a finished task is cancelled.
        if case .failure = result, let task, task.state == .running { task.cancel() }
      }
    }
    let once = Once()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let task = URLSession.shared.dataTask(with: request) { data, response, error in
          if let response {
            once.finish(.success((data ?? Data(), response)))
          } else {
            let reason = Redactor().redact(error?.localizedDescription ?? "no response")
            once.finish(.failure(GZoneError(.unreadable, origin: origin, "network error: \(reason)")))
          }
        }
        once.start(continuation, task: task)
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
          once.finish(.failure(GZoneError(.unreadable, origin: origin, "no reply within \(Int(timeout)) s")))
        }
      }
    } onCancel: {
      once.finish(.failure(CancellationError()))
    }
  }
}
