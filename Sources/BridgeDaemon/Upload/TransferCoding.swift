/// The request and the result on the pipes: length-prefixed fields, little-endian.
enum TransferCoding {
  struct Writer {
    var bytes: [UInt8] = []
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func data(_ value: [UInt8]) {
      u64(UInt64(value.count))
      bytes += value
    }
    mutating func string(_ value: String) { data(Array(value.utf8)) }
    mutating func optional(_ value: String?) {
      u64(value == nil ? 0 : 1)
      if let value { string(value) }
    }
  }

  struct Reader {
    let bytes: [UInt8]
    var at = 0
    mutating func u64() -> UInt64? {
      guard at + 8 <= bytes.count else { return nil }
      var value: UInt64 = 0
      for i in 0..<8 { value |= UInt64(bytes[at + i]) << (8 * i) }
      at += 8
      return value
    }
    mutating func data() -> [UInt8]? {
      guard let count = u64(), count <= UInt64(bytes.count - at) else { return nil }
      defer { at += Int(count) }
      return Array(bytes[at..<at + Int(count)])
    }
    mutating func string() -> String? { data().map { String(decoding: $0, as: UTF8.self) } }
    mutating func optional() -> String?? {
      guard let flag = u64() else { return nil }
      if flag == 0 { return .some(nil) }
      guard let value = string() else { return nil }
      return .some(value)
    }
  }

  static func encode(_ request: HTTPRequest) -> [UInt8] {
    var w = Writer()
    w.u64(request.method == .post ? 1 : 0)
    w.string(request.url)
    w.u64(UInt64(request.headers.count))
    for header in request.headers { w.string(header) }
    w.data(request.body)
    w.u64(request.timeout.bitPattern)
    w.optional(request.tls.caFile)
    w.optional(request.tls.certFile)
    w.optional(request.tls.keyFile)
    return w.bytes
  }

  static func decodeRequest(_ bytes: [UInt8]) -> HTTPRequest? {
    var r = Reader(bytes: bytes)
    guard let method = r.u64(), let url = r.string(), let count = r.u64(), count < 10_000 else { return nil }
    var headers: [String] = []
    for _ in 0..<count {
      guard let header = r.string() else { return nil }
      headers.append(header)
    }
    guard let body = r.data(), let timeout = r.u64(), let ca = r.optional(), let cert = r.optional(),
      let key = r.optional(), r.at == bytes.count
    else { return nil }
    return HTTPRequest(
      method: method == 1 ? .post : .get, url: url, headers: headers, body: body,
      timeout: Double(bitPattern: timeout), tls: TLSFiles(caFile: ca, certFile: cert, keyFile: key))
  }

  static func encode(_ result: Result<HTTPResponse, HTTPTransferError>) -> [UInt8] {
    var w = Writer()
    switch result {
    case .success(let response):
      w.u64(0)
      w.u64(UInt64(bitPattern: Int64(response.status)))
      w.u64(UInt64(response.headers.count))
      for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) {
        w.string(name)
        w.string(value)
      }
      w.data(response.body)
    case .failure(let error):
      w.u64(1)
      w.u64(UInt64(error.code))
      w.string(error.message)
    }
    return w.bytes
  }

  static func decodeResult(_ bytes: [UInt8]) -> Result<HTTPResponse, HTTPTransferError>? {
    var r = Reader(bytes: bytes)
    switch r.u64() {
    case 0:
      guard let status = r.u64(), let count = r.u64(), count < 100_000 else { return nil }
      var headers: [String: String] = [:]
      for _ in 0..<count {
        guard let name = r.string(), let value = r.string() else { return nil }
        headers[name] = value
      }
      guard let body = r.data(), r.at == bytes.count else { return nil }
      return .success(HTTPResponse(status: Int(Int64(bitPattern: status)), headers: headers, body: body))
    case 1:
      guard let code = r.u64(), let message = r.string(), r.at == bytes.count else { return nil }
      return .failure(HTTPTransferError(code: UInt32(truncatingIfNeeded: code), message: message))
    default:
      return nil
    }
  }
}
