import BeaconCore
import CCurl

#if canImport(Glibc)
  import Glibc
#endif

/// One HTTP request for `CurlClient`.
struct HTTPRequest: Sendable {
  enum Method: String, Sendable {
    case get = "GET"
    case post = "POST"
  }
  var method: Method
  var url: String
  /// Header lines, `Name: value`, in order.
  var headers: [String] = []
  var body: [UInt8] = []
  /// Seconds the whole exchange may take (CURLOPT_TIMEOUT_MS).
  var timeout: Double
  var tls = TLSFiles()

  /// Seconds the TCP and TLS handshakes may take (CURLOPT_CONNECTTIMEOUT_MS): 10, or the
  /// whole timeout when that is shorter.
  var connectTimeout: Double { min(timeout, 10) }
  /// A reply body larger than this fails the request (a G-Zone payload is a few KiB).
  static let maximumBodySize = 16 << 20
}

/// A complete HTTP reply: libcurl read it to its end.
struct HTTPResponse: Sendable {
  var status: Int
  /// Header values by lowercased name; a repeated header keeps its last value.
  var headers: [String: String]
  var body: [UInt8]

  func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why an exchange failed before a complete reply: libcurl's code and its message.
struct HTTPTransferError: Error, Sendable, CustomStringConvertible {
  var code: UInt32
  var message: String
  /// The connect or total timeout ran out.
  var timedOut: Bool { code == CURLE_OPERATION_TIMEDOUT.rawValue }
  var cancelled: Bool { code == CURLE_ABORTED_BY_CALLBACK.rawValue }
  var description: String { message }
}

/// HTTP through libcurl's easy interface (`CCurl`, Debian's libcurl4-openssl-dev), always in a
/// child process (`CurlTransferProcess`): libcurl is loaded only there, never in the daemon or a
/// test runner.
///
/// The deadline is libcurl's: `CURLOPT_CONNECTTIMEOUT_MS` for the handshakes and
/// `CURLOPT_TIMEOUT_MS` for the whole exchange, so a server that accepts and never answers,
/// answers slowly or closes mid-reply ends the request within the timeout with an error (never a
/// hang, never a short body taken as a reply). Cancelling the calling task kills the child. Only
/// http and https are allowed, redirects are not followed, and a proxy comes from the environment
/// (`http_proxy`, `https_proxy`, `no_proxy`) as curl reads it.
enum CurlClient {
  static func perform(_ request: HTTPRequest) async throws(HTTPTransferError) -> HTTPResponse {
    guard let executable = HTTPTransfers.executable else {
      throw HTTPTransferError(
        code: CURLE_FAILED_INIT.rawValue, message: "no beaconbridged executable to run the HTTP transfer")
    }
    return try await CurlTransferProcess.perform(request, executable: executable).get()
  }

  /// The request on the calling thread: `beaconbridged --http-transfer`'s side. Here, in this
  /// file, because the shim's loaded-library table is a static in a `static inline` function, of
  /// which each compiled file may hold its own copy.
  static func performHere(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPTransferError> {
    if let problem = bb_curl_load() {
      return .failure(HTTPTransferError(code: CURLE_FAILED_INIT.rawValue, message: String(cString: problem)))
    }
    return Transfer(request).run()
  }

  /// Why libcurl's URL parser refuses `url`, or nil when it takes it whole: a scheme, a host, a
  /// port in range, no spaces (`beaconbridged --check-url`'s side, `URLCheck`). The
  /// corresponding C functions are `curl_url_set` and `curl_url_get`.
  static func urlProblemHere(_ url: String) -> String? {
    if let problem = bb_curl_load() { return "cannot be checked: \(String(cString: problem))" }
    guard let handle = bb_curl_url() else { return "cannot be checked: curl_url failed" }
    defer { bb_curl_url_cleanup(handle) }
    let parsed = bb_curl_url_set(handle, CURLUPART_URL, url, bb_curlu_non_support_scheme())
    guard parsed == CURLUE_OK else { return String(cString: bb_curl_url_strerror(parsed)) }
    var host: UnsafeMutablePointer<CChar>?
    let found = bb_curl_url_get(handle, CURLUPART_HOST, &host, 0)
    defer { bb_curl_free(host) }
    guard found == CURLUE_OK, let host, host.pointee != 0 else { return "has no host" }
    // libcurl's parser takes port 0, which no server listens on.
    var port: UnsafeMutablePointer<CChar>?
    defer { bb_curl_free(port) }
    if bb_curl_url_get(handle, CURLUPART_PORT, &port, 0) == CURLUE_OK, let port, String(cString: port) == "0"
    {
      return "has port 0 (a port is 1 to 65535)"
    }
    return nil
  }

  /// One transfer: its request and what the callbacks collect.
  final class Transfer {
    let request: HTTPRequest
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var tooLarge = false

    init(_ request: HTTPRequest) { self.request = request }

    /// The transfer. The corresponding C function is `curl_easy_perform`.
    func run() -> Result<HTTPResponse, HTTPTransferError> {
      guard let handle = bb_curl_easy_init() else {
        return .failure(HTTPTransferError(code: CURLE_FAILED_INIT.rawValue, message: "curl_easy_init failed"))
      }
      defer { bb_curl_easy_cleanup(handle) }
      var headerList: UnsafeMutablePointer<curl_slist>?
      defer { bb_curl_slist_free_all(headerList) }
      var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
      let context = Unmanaged.passUnretained(self).toOpaque()

      var code = CURLE_OK
      func set(_ result: CURLcode) { if code == CURLE_OK { code = result } }
      errorBuffer.withUnsafeMutableBufferPointer { errors in
        set(bb_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, errors.baseAddress))
        set(bb_curl_set_string(handle, CURLOPT_URL, request.url))
        set(bb_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(bb_curl_set_long(handle, CURLOPT_NOSIGNAL, 1))
        set(bb_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout * 1000)))
        set(bb_curl_set_long(handle, CURLOPT_TIMEOUT_MS, Int(request.timeout * 1000)))
        if let ca = request.tls.caFile { set(bb_curl_set_string(handle, CURLOPT_CAINFO, ca)) }
        if let cert = request.tls.certFile { set(bb_curl_set_string(handle, CURLOPT_SSLCERT, cert)) }
        if let key = request.tls.keyFile { set(bb_curl_set_string(handle, CURLOPT_SSLKEY, key)) }
        switch request.method {
        case .get:
          set(bb_curl_set_long(handle, CURLOPT_HTTPGET, 1))
        case .post:
          set(bb_curl_set_long(handle, CURLOPT_POST, 1))
          set(bb_curl_set_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
          // COPYPOSTFIELDS copies the bytes into the handle, so no Swift buffer must outlive this.
          request.body.withUnsafeBytes { bytes in
            let empty: [CChar] = [0]
            if bytes.isEmpty {
              empty.withUnsafeBufferPointer {
                set(
                  bb_curl_set_pointer(
                    handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)))
              }
            } else {
              set(
                bb_curl_set_pointer(
                  handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress)))
            }
          }
        }
        // No `Expect: 100-continue` round trip: the body goes with the headers.
        for line in request.headers + ["Expect:"] { headerList = bb_curl_slist_append(headerList, line) }
        set(bb_curl_set_headers(handle, headerList))
        set(bb_curl_set_pointer(handle, CURLOPT_WRITEDATA, context))
        set(
          bb_curl_set_write_callback(handle) { data, size, count, context in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            guard transfer.body.count + length <= HTTPRequest.maximumBodySize else {
              transfer.tooLarge = true
              return 0
            }
            if let data {
              transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
            }
            return length
          })
        set(bb_curl_set_pointer(handle, CURLOPT_HEADERDATA, context))
        set(
          bb_curl_set_header_callback(handle) { data, size, count, context in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            guard let data else { return length }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
            transfer.header(line)
            return length
          })
        if code == CURLE_OK { code = bb_curl_easy_perform(handle) }
      }
      guard code == CURLE_OK else {
        let detail = String(
          decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var message = detail.isEmpty ? String(cString: bb_curl_easy_strerror(code)) : detail
        if tooLarge { message = "the reply is larger than \(HTTPRequest.maximumBodySize) bytes" }
        return .failure(HTTPTransferError(code: code.rawValue, message: message))
      }
      var status = 0
      _ = bb_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
      return .success(HTTPResponse(status: status, headers: headers, body: body))
    }

    /// One header line. A status line starts a new header block (a 1xx reply's are dropped).
    func header(_ text: String) {
      var line = text
      while line.last?.isNewline == true { line.removeLast() }
      if line.hasPrefix("HTTP/") {
        headers = [:]
        return
      }
      guard let colon = line.firstIndex(of: ":") else { return }
      let name = line[..<colon].lowercased()
      let value = String(line[line.index(after: colon)...]).trimmedWhitespace
      headers[name] = value
    }
  }
}
