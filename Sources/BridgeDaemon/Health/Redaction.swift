/// Keeps secrets out of support bundles.
///
/// Configuration lines whose key names a secret (token, password, secret, key, credential) lose
/// their value; URLs lose their user info and secret-looking query values; and every known secret
/// value (the token file's contents, passwords found above) is scrubbed from every text in the
/// bundle, wherever it appears (logs included).
public struct Redactor: Sendable {
  public private(set) var secrets: [String] = []
  public static let mark = "<redacted>"

  public init(secrets: [String] = []) {
    for secret in secrets { add(secret) }
  }

  public mutating func add(_ secret: String) {
    let trimmed = secret.trimmedWhitespace.filter { $0 != "\n" && $0 != "\r" }
    // Very short values would scrub ordinary words; a real token is longer.
    if trimmed.count >= 4, !secrets.contains(trimmed) { secrets.append(trimmed) }
  }

  static func isSecretKey(_ key: String) -> Bool {
    let lower = key.lowercased()
    return ["token", "password", "passwd", "secret", "credential", "apikey", "api_key"].contains {
      lower.contains($0)
    }
      && !lower.hasSuffix("file")
  }

  /// A configuration file, line by line; learns the secrets it removes.
  public mutating func redactConfiguration(_ text: String) -> String {
    var out: [String] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let raw = String(line)
      guard let equals = raw.firstIndex(of: "="), !raw.trimmedWhitespace.hasPrefix("#") else {
        out.append(raw)
        continue
      }
      let key = String(raw[..<equals]).trimmedWhitespace
      let value = String(raw[raw.index(after: equals)...]).trimmedWhitespace
      if Self.isSecretKey(key) {
        add(value)
        out.append("\(key) = \(Self.mark)")
      } else {
        out.append("\(key) = \(redactURL(value))")
      }
    }
    return scrub(out.joined(separator: "\n"))
  }

  /// `https://user:pass@host/path?token=x` → `https://<redacted>@host/path?token=<redacted>`.
  public mutating func redactURL(_ text: String) -> String {
    guard let scheme = text.range(of: "://") else { return text }
    var result = text
    let afterScheme = result[scheme.upperBound...]
    let hostEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? result.endIndex
    if let at = result[scheme.upperBound..<hostEnd].lastIndex(of: "@") {
      let userInfo = String(result[scheme.upperBound..<at])
      if let colon = userInfo.firstIndex(of: ":") { add(String(userInfo[userInfo.index(after: colon)...])) }
      result.replaceSubrange(scheme.upperBound..<at, with: Self.mark)
    }
    if let question = result.firstIndex(of: "?") {
      let query = result[result.index(after: question)...].split(separator: "&").map { pair -> String in
        let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, Self.isSecretKey(parts[0]) || parts[0].lowercased() == "key" else {
          return String(pair)
        }
        add(parts[1])
        return "\(parts[0])=\(Self.mark)"
      }
      result = String(result[...question]) + query.joined(separator: "&")
    }
    return result
  }

  /// Replaces every known secret, wherever it appears.
  public func scrub(_ text: String) -> String {
    var out = text
    for secret in secrets.sorted(by: { $0.count > $1.count }) {
      out = out.replacingAll(secret, with: Self.mark)
    }
    return out
  }
}

extension String {
  func replacingAll(_ target: String, with replacement: String) -> String {
    guard !target.isEmpty else { return self }
    var out = ""
    var rest = self[...]
    while let range = rest.range(of: target) {
      out += rest[..<range.lowerBound]
      out += replacement
      rest = rest[range.upperBound...]
    }
    out += rest
    return out
  }
}
