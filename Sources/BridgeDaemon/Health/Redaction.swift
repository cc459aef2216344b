import BeaconCore

/// Keeps secrets out of everything beaconbridge prints or writes: `doctor` (text and JSON),
/// `status`, the daemon's log lines, error messages and the support bundle all go through
/// `redact(_:)`, the one redaction function.
///
/// - Every URL in a text loses its user info (`https://user:pass@host` → `https://<redacted>@host`)
///   and the value of every query and fragment parameter (`token=<redacted>`), by an allow-list:
///   only the parameters named in `safeParameters` keep their values (docs/upload.md, "Secrets").
///   A secret's name cannot be guessed (`sig`, `X-Amz-Signature`, `code`, a backend's own), a
///   harmless one can be listed.
/// - Every known secret is scrubbed wherever it appears: the passwords and parameter values
///   removed from URLs, secret configuration values, and the token files' contents
///   (`init(configuration:)` learns them all).
/// - Configuration files (`redactConfiguration`) keep only the values of the keys the
///   configuration knows, by an allow-list too.
public struct Redactor: Sendable {
  public private(set) var secrets: [String] = []
  public static let mark = "<redacted>"

  public init(secrets: [String] = []) {
    for secret in secrets { add(secret) }
  }

  /// Learns every secret in a configuration: the credentials and secret parameters of the
  /// `[Upload]` and `[GZone]` URLs, and, when `readingTokenFiles`, the token files' and the
  /// `[MQTT] PasswordFile`'s contents
  /// (read whatever their mode: a token in a badly protected file must not leak either).
  public init(configuration: DaemonConfiguration, readingTokenFiles: Bool = true) {
    var urls = [configuration.uploadURL].compactMap { $0 }
    urls += configuration.gzone.urls.values
    urls += GZonePayloadURLs.all(configuration.gzone)
    for url in urls { _ = redactURL(url) }
    guard readingTokenFiles else { return }
    let files = [configuration.tokenFile, configuration.gzone.tokenFile, configuration.mqtt.passwordFile]
    for file in Set(files.compactMap { $0 }) {
      if let token = TokenFile.readForRedaction(file) { add(token) }
    }
  }

  public mutating func add(_ secret: String) {
    let trimmed = secret.trimmedWhitespace.filter { $0 != "\n" && $0 != "\r" }
    // Very short values would scrub ordinary words; a real token is longer. A number or a JSON
    // word (`auth=true`) is not scrubbed elsewhere either: it would break JSON and counts (the
    // URL it came from is still redacted).
    guard trimmed.count >= 4, !secrets.contains(trimmed) else { return }
    guard !trimmed.allSatisfy(\.isNumber), !["true", "false", "null"].contains(trimmed.lowercased()) else {
      return
    }
    secrets.append(trimmed)
  }

  /// The one redaction function: every URL in `text` redacted, then every known secret.
  public func redact(_ text: String) -> String {
    var learning = self
    let urlsRedacted = learning.redactURLs(in: text)
    return learning.scrub(urlsRedacted)
  }

  /// The query and fragment parameters whose values are kept: paging, format and expiry words
  /// that no signing or login scheme uses for a secret (compared without case). Every other
  /// parameter's value is redacted. docs/upload.md lists them; keep the two in step.
  public static let safeParameters: Set<String> = [
    "format", "lang", "limit", "offset", "page", "version", "expires", "x-amz-algorithm", "x-amz-date",
    "x-amz-expires",
  ]

  /// A URL parameter whose value is shown: only a name on `safeParameters`.
  static func isSafeParameter(_ key: String) -> Bool {
    safeParameters.contains(key.lowercased())
  }

  /// A configuration file, line by line, by an allow-list: a value is shown only under a key
  /// the configuration knows in its section (none of which holds a secret itself: secrets live
  /// in the files those keys name), with its URLs redacted. Every other value (a misspelt key, a
  /// line from a future version, `Authorization = …` pasted in) is removed and learnt as a
  /// secret, so it is scrubbed from the rest of the bundle too.
  public mutating func redactConfiguration(_ text: String) -> String {
    var out: [String] = []
    var section = ""
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let raw = String(line)
      let trimmed = raw.trimmedWhitespace
      if trimmed.hasPrefix("["), let close = trimmed.firstIndex(of: "]") {
        section = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close]).trimmedWhitespace
        out.append(raw)
        continue
      }
      guard let equals = raw.firstIndex(of: "="), !trimmed.hasPrefix("#"), !trimmed.hasPrefix(";") else {
        out.append(raw)
        continue
      }
      let key = String(raw[..<equals]).trimmedWhitespace
      let value = String(raw[raw.index(after: equals)...]).trimmedWhitespace
      if DaemonConfiguration.isKnownKey(section: section, key: key) {
        out.append("\(key) = \(redactURLs(in: value))")
      } else {
        add(value)
        out.append("\(key) = \(Self.mark)")
      }
    }
    return scrub(out.joined(separator: "\n"))
  }

  /// Every `scheme://…` in a text, up to the first space, quote or angle bracket, redacted by
  /// `redactURL`.
  mutating func redactURLs(in text: String) -> String {
    var out = ""
    var rest = text[...]
    while let separator = rest.firstRange(of: "://") {
      var start = separator.lowerBound
      while start > rest.startIndex {
        let before = rest.index(before: start)
        let c = rest[before]
        guard c.isASCII, c.isLetter || c.isNumber || c == "+" || c == "-" || c == "." else { break }
        start = before
      }
      let end = rest[separator.upperBound...].firstIndex(where: Self.endsURL) ?? rest.endIndex
      out += rest[..<start]
      out += redactURL(String(rest[start..<end]))
      rest = rest[end...]
    }
    out += rest
    return out
  }

  static func endsURL(_ c: Character) -> Bool {
    c.isWhitespace || "\"'<>\\`)]".contains(c) || c.unicodeScalars.contains { $0.value < 0x20 }
  }

  /// `https://user:pass@host/path?token=x&page=2#sig=y` →
  /// `https://<redacted>@host/path?token=<redacted>&page=2#sig=<redacted>`; learns what it removes.
  public mutating func redactURL(_ url: String) -> String {
    guard let scheme = url.firstRange(of: "://") else { return url }
    let rest = url[scheme.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
    var authority = String(rest[..<authorityEnd])
    if let at = authority.lastIndex(of: "@") {
      let userInfo = authority[..<at]
      // `user:password`, or a bare token as the user (`https://TOKEN@host`).
      if let colon = userInfo.firstIndex(of: ":") {
        add(String(userInfo[userInfo.index(after: colon)...]))
      } else {
        add(String(userInfo))
      }
      authority = Self.mark + authority[at...]
    }
    let tail = rest[authorityEnd...]
    guard let parameters = tail.firstIndex(where: { $0 == "?" || $0 == "#" }) else {
      return String(url[..<scheme.upperBound]) + authority + tail
    }
    var out = String(url[..<scheme.upperBound]) + authority + tail[..<parameters]
    // key=value pairs after `?` and `#`, separated by `&` or `;`.
    var pair = ""
    // Every value is redacted unless its name is on the allow-list; a part without `=` (a bare
    // `?TOKEN` or `#TOKEN`) is all value.
    func flush() {
      defer { pair = "" }
      guard !pair.isEmpty else { return }
      guard let equals = pair.firstIndex(of: "=") else {
        add(pair)
        out += Self.mark
        return
      }
      let value = String(pair[pair.index(after: equals)...])
      if Self.isSafeParameter(String(pair[..<equals])) || value.isEmpty {
        out += pair
      } else {
        add(value)
        out += String(pair[...equals]) + Self.mark
      }
    }
    for c in tail[parameters...] {
      if c == "?" || c == "#" || c == "&" || c == ";" {
        flush()
        out.append(c)
      } else {
        pair.append(c)
      }
    }
    flush()
    return out
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

/// The `[GZone]` URLs with their placeholders filled in (as they are requested and logged).
enum GZonePayloadURLs {
  static func all(_ configuration: GZoneConfiguration) -> [String] {
    GZoneConfiguration.urlKeys.compactMap { configuration.url(for: $0.payload) }
  }
}

extension HealthReport {
  /// The same report with every detail and recommendation through `redactor`.
  public func redacted(by redactor: Redactor) -> HealthReport {
    var copy = self
    for i in copy.checks.indices {
      copy.checks[i].detail = redactor.redact(copy.checks[i].detail)
      copy.checks[i].recommendation = copy.checks[i].recommendation.map(redactor.redact)
    }
    return copy
  }
}

extension String {
  func replacingAll(_ target: String, with replacement: String) -> String {
    guard !target.isEmpty else { return self }
    var out = ""
    var rest = self[...]
    while let range = rest.firstRange(of: target) {
      out += rest[..<range.lowerBound]
      out += replacement
      rest = rest[range.upperBound...]
    }
    out += rest
    return out
  }
}
