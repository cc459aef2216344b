#if canImport(Glibc)
  import Glibc
#endif

/// A URL checked whole when the configuration loads: libcurl's URL parser (`curl_url_set`)
/// must take it as libcurl will use it for a transfer (a scheme, a host, a port in range, no
/// spaces), and it may hold no control or bidirectional-formatting character (which would show
/// one URL and request another). An invalid URL is a configuration error at its `file:line`.
///
/// The parser is libcurl's, and libcurl stays out of the daemon (`CurlTransferProcess`): the
/// check runs in the same child as a transfer, `beaconbridged --check-url`, which reads the URL
/// on stdin and writes libcurl's refusal on stdout. About 16 ms per URL, at start and on SIGHUP.
public enum URLCheck {
  /// The argument that makes the daemon's executable check one URL.
  public static let childArgument = "--check-url"

  /// Why `url` cannot be used, or nil. Nil too when no `beaconbridged` can be found to ask
  /// (a build without it): the characters are still checked here.
  public static func problem(_ url: String) -> String? {
    if let character = url.unicodeScalars.first(where: isRefused) {
      return "holds the character U+\(hex(character.value)) (a control or bidirectional-formatting character)"
    }
    guard let executable = HTTPTransfers.executable else { return nil }
    let child = CurlTransferProcess.Child(
      executable: executable, request: Array(url.utf8), argument: childArgument)
    guard
      case .success(let (pid, input, output)) = CurlTransferProcess.Child.spawning.withLock({ _ in
        child.spawn()
      })
    else { return nil }
    _ = CurlTransferProcess.writeAll(input, Array(url.utf8))
    close(input)
    let reply = CurlTransferProcess.readAll(output)
    close(output)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    // Exit 1 is a refusal with its reason; anything else (the child died) leaves it unchecked.
    guard status & 0x7f == 0, (status >> 8) & 0xff == 1 else { return nil }
    let reason = String(decoding: reply.prefix(512), as: UTF8.self)
    return "is refused by libcurl's URL parser: \(reason.isEmpty ? "malformed" : reason)"
  }

  /// Spaces and every C0/C1 control are refused by libcurl too; the bidirectional formatting
  /// characters (Unicode's Bidi_Control property) are not, so they are refused here.
  static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    return value < 0x20 || (0x7f...0x9f).contains(value) || value == 0x061c || value == 0x200e
      || value == 0x200f || (0x202a...0x202e).contains(value) || (0x2066...0x2069).contains(value)
  }

  private static func hex(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }

  /// `beaconbridged --check-url`: one URL from stdin; exit 0 when libcurl takes it, 1 with the
  /// reason on stdout when it does not.
  static func serve() -> Int32 {
    let url = String(decoding: CurlTransferProcess.readAll(STDIN_FILENO).prefix(65536), as: UTF8.self)
    guard let problem = CurlClient.urlProblemHere(url) else { return 0 }
    _ = CurlTransferProcess.writeAll(STDOUT_FILENO, Array(problem.utf8))
    return 1
  }
}
