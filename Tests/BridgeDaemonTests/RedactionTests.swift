import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

/// `Redactor.redact`, the one redaction function, on the texts that reach users and logs.
@Suite struct RedactionTests {
  @Test(arguments: [
    (
      "https://user:pass-word@host.example/trips?token=abcd1234&sig=zz99zz&x=1",
      "https://<redacted>@host.example/trips?token=<redacted>&sig=<redacted>&x=<redacted>"
    ),
    (
      "upload failed: POST https://fleet:pa55@h:8443/a?x=1 (HTTP 500); retrying",
      "upload failed: POST https://<redacted>@h:8443/a?x=<redacted> (HTTP 500); retrying"
    ),
    ("\"detail\":\"http://h/x?api_key=k3y-value\"", "\"detail\":\"http://h/x?api_key=<redacted>\""),
    ("https://TOKEN123@h/", "https://<redacted>@h/"),
    (
      "https://h/cb#access_token=frag-secret&state=s",
      "https://h/cb#access_token=<redacted>&state=<redacted>"
    ),
    (
      "https://h/x?Signature=AbCd&X-Amz-Credential=cred1&Expires=9",
      "https://h/x?Signature=<redacted>&X-Amz-Credential=<redacted>&Expires=9"
    ),
    ("no url here: token=abc", "no url here: token=abc"),
    (
      "two: http://a:b1b1@x/ and http://c:d2d2@y/?key=k9k9",
      "two: http://<redacted>@x/ and http://<redacted>@y/?key=<redacted>"
    ),
  ])
  func urls(_ text: String, _ expected: String) {
    #expect(Redactor().redact(text) == expected)
  }

  /// The allow-list: a name that is not on `Redactor.safeParameters` loses its value, in the
  /// query and in the fragment, whatever it is called; none of these names is known to the
  /// redactor as a secret.
  @Test(arguments: ["sig", "X-Amz-Signature", "access_token", "apikey", "code", "fleetPass", "q"])
  func unknownParameterNamesAreRedacted(_ name: String) {
    let value = "v4lue-\(name.count)-zz"
    #expect(
      Redactor().redact("https://h/p?\(name)=\(value)&page=2") == "https://h/p?\(name)=<redacted>&page=2")
    #expect(Redactor().redact("https://h/p#\(name)=\(value)") == "https://h/p#\(name)=<redacted>")
    // The value is learned: where a server echoes it, it is scrubbed too.
    #expect(Redactor().redact("https://h/p?\(name)=\(value) echoed \(value)").hasSuffix("echoed <redacted>"))
  }

  /// A parameter on the allow-list keeps its value, in any case; so does an empty value.
  @Test(arguments: Array(Redactor.safeParameters))
  func safeParameterNamesKeepTheirValues(_ name: String) {
    #expect(
      Redactor().redact("https://h/p?\(name)=json-2026&sig=s1g-value")
        == "https://h/p?\(name)=json-2026&sig=<redacted>")
    #expect(
      Redactor().redact("https://h/p?\(name.uppercased())=json-2026")
        == "https://h/p?\(name.uppercased())=json-2026")
    #expect(Redactor().redact("https://h/p?q=&\(name)=1") == "https://h/p?q=&\(name)=1")
  }

  /// A query or fragment part without `=` is all value: a bare token in a URL is redacted.
  @Test func bareQueryAndFragmentAreRedacted() {
    #expect(Redactor().redact("https://h/cb#Zm9vYmFyLXRva2Vu") == "https://h/cb#<redacted>")
    #expect(Redactor().redact("https://h/p?Zm9vYmFyLXRva2Vu&page=3") == "https://h/p?<redacted>&page=3")
  }

  /// A password taken out of a URL is also scrubbed where it appears on its own.
  @Test func learnedSecretsAreScrubbedEverywhere() {
    let text = "GET https://u:pa55word-x@h/ failed; the server echoed pa55word-x"
    #expect(Redactor().redact(text) == "GET https://<redacted>@h/ failed; the server echoed <redacted>")
  }

  /// The configuration teaches every secret it holds: URLs of [Upload] and [GZone], token files.
  @Test func configurationSecrets() throws {
    let dir = try scratchDirectory("redact")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // Even a token in a badly protected file is learned: it must not leak either.
    try "t0k-upload\n".write(toFile: dir + "/token", atomically: true, encoding: .utf8)
    var config = try DaemonConfiguration.parse(
      """
      [Upload]
      URL = https://fleet:pa55word-x@h/trips?token=q-secret-1
      TokenFile = \(dir)/token
      [GZone]
      ExperienceLevelsURL = https://h/levels?sig=g-sig-1
      PlayerURL = https://h/players/{unitId}
      AvailableGamesURL = https://h/games
      GameRoundsURL = https://gz:gz-pass-9@h/rounds
      UnitId = 4711
      """, file: "x.conf")
    config.gzone.tokenFile = nil
    try "mq-pass-77\n".write(toFile: dir + "/mqtt-password", atomically: true, encoding: .utf8)
    config.mqtt.passwordFile = dir + "/mqtt-password"
    let redactor = Redactor(configuration: config)
    let line = "secrets: pa55word-x q-secret-1 t0k-upload g-sig-1 gz-pass-9 mq-pass-77"
    #expect(
      redactor.redact(line) == "secrets: <redacted> <redacted> <redacted> <redacted> <redacted> <redacted>")
  }

  /// A parameter value that is a JSON word or a number is redacted in its URL only: scrubbing it
  /// everywhere would break the JSON around it.
  @Test func jsonWordsAreNotScrubbedElsewhere() throws {
    let text = #"{"url":"https://h/x?auth=true&key=123456","armed":true,"count":123456}"#
    let redacted = Redactor().redact(text)
    #expect(redacted == #"{"url":"https://h/x?auth=<redacted>&key=<redacted>","armed":true,"count":123456}"#)
    _ = try JSONValue.parse(Data(redacted.utf8))
  }

  @Test func daemonLogLinesAreRedacted() {
    var config = DaemonConfiguration()
    config.uploadURL = "https://fleet:pa55word-x@h/trips?token=q-secret-1"
    let logger = DaemonLogger(environment: [:])
    logger.learnSecrets(of: config)
    logger.log(.warning, "post to https://fleet:pa55word-x@h/trips?token=q-secret-1 failed")
    logger.log(.warning, "the backend said pa55word-x and q-secret-1")
    let recent = logger.recent.joined(separator: "\n")
    #expect(!recent.contains("pa55word-x") && !recent.contains("q-secret-1"), "\(recent)")
    #expect(recent.contains("https://<redacted>@h/trips?token=<redacted>"))
  }

  /// The support bundle's copy of the configuration file keeps the values of known keys only:
  /// an unknown key's value (whatever its name) is removed, and scrubbed wherever it appears.
  @Test func aConfigurationFileKeepsOnlyKnownKeysValues() {
    let text = """
      [Upload]
      URL = https://h/trips?page=2&sig=s1gn4ture
      TokenFile = /etc/beaconbridge/token
      Authorization = Bearer b3arer-value
      [Presence]
      exitTimeout = 45
      [General]
      exitTimeout = 46
      # Authorization = comment-kept
      """
    var redactor = Redactor()
    let out = redactor.redactConfiguration(text + "\nlater: Bearer b3arer-value")
    #expect(out.contains("URL = https://h/trips?page=2&sig=<redacted>"), "\(out)")
    #expect(out.contains("TokenFile = /etc/beaconbridge/token"), "\(out)")
    #expect(out.contains("Authorization = <redacted>") && !out.contains("b3arer-value"), "\(out)")
    #expect(out.contains("exitTimeout = 45"), "\(out)")
    // A known key in the wrong section is not a setting there: its value is not shown.
    #expect(out.contains("exitTimeout = <redacted>") && !out.contains("46"), "\(out)")
    #expect(out.contains("# Authorization = comment-kept"), "\(out)")
  }
}
