/// The TLS files of one HTTP client (`[Upload] CAFile`, `CertFile`, `KeyFile`): a CA bundle to
/// trust instead of the system's, and a client certificate and key for mutual TLS.
public struct TLSFiles: Hashable, Sendable {
  public var caFile: String?
  public var certFile: String?
  public var keyFile: String?

  public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil) {
    self.caFile = caFile
    self.certFile = certFile
    self.keyFile = keyFile
  }
}
