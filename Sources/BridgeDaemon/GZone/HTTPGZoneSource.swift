import BeaconCore
import FoundationEssentials
import GZone

/// The four G-Zone requests over HTTP: one GET per payload, a bearer token read from
/// `tokenFile` on every load (a rotated token needs no restart), and a hard deadline per request
/// (libcurl's connect and total timeouts, `CurlClient`). Cancelling the calling task aborts it.
///
/// A status other than 2xx, a network error or a timeout fails that request, and so the load;
/// errors name the URL, redacted (never the token, credentials or secret parameters).
public struct HTTPGZoneSource: GZoneSource {
  public var configuration: GZoneConfiguration
  /// The token file when `[GZone]` names none (`[Upload] TokenFile`).
  public var fallbackTokenFile: String?
  public var timeout: Double
  /// `[Upload]`'s TLS files: the G-Zone requests trust the same CA and present the same client
  /// certificate as the uploads.
  public var tls: TLSFiles

  public init(
    configuration: GZoneConfiguration, fallbackTokenFile: String? = nil, timeout: Double = 30,
    tls: TLSFiles = TLSFiles()
  ) {
    self.configuration = configuration
    self.fallbackTokenFile = fallbackTokenFile
    self.timeout = timeout
    self.tls = tls
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
    var request = HTTPRequest(method: .get, url: url.absoluteString, timeout: timeout, tls: tls)
    request.headers = ["Accept: application/json"]
    if let tokenFile = configuration.tokenFile ?? fallbackTokenFile {
      let token: String
      do { token = try TokenFile.read(tokenFile) } catch {
        throw GZoneError(.unreadable, origin: origin, "not requested: \(error.description)")
      }
      request.headers.append("Authorization: Bearer \(token)")
    }
    let response: HTTPResponse
    do { response = try await CurlClient.perform(request) } catch {
      if error.cancelled { throw CancellationError() }
      let reason = Redactor().redact(error.message)
      if error.timedOut {
        throw GZoneError(.unreadable, origin: origin, "no reply within \(Int(timeout)) s: \(reason)")
      }
      throw GZoneError(.unreadable, origin: origin, "network error: \(reason)")
    }
    guard (200..<300).contains(response.status) else {
      throw GZoneError(.unreadable, origin: origin, "HTTP \(response.status)")
    }
    return Data(response.body)
  }
}
