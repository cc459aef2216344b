import BeaconCore
import Foundation
import Testing

@testable import BridgeDaemon

/// `[Upload] URL` checked whole when the configuration loads (`URLCheck`): libcurl's URL parser,
/// run in `beaconbridged --check-url`, and the characters that parser lets through.
@Suite struct URLCheckTests {
  func load(_ url: String) throws(KeyFileError) -> DaemonConfiguration {
    try DaemonConfiguration.parseChecked("[General]\n[Upload]\nURL = \(url)\n", file: "u.conf")
  }

  /// Each is refused at its line, with why. A port out of range and a host missing are only
  /// libcurl's to find (the scheme check before it lets them through).
  @Test(arguments: [
    ("https://backend.example:99999/trips", "libcurl"), ("https://backend.example:0/trips", "port 0"),
    ("https://:8443/trips", "libcurl"),
    ("https://exa mple.com/trips", "libcurl"), ("http://[::1/trips", "libcurl"),
    ("https://backend.example/tr\u{202E}ips", "U+202E"), ("https://backend.example/\u{2066}x", "U+2066"),
    ("https://backend.example/a\u{7}b", "U+0007"),
  ])
  func anUnusableURLIsAConfigurationErrorAtItsLine(_ url: String, _ reason: String) {
    #expect {
      _ = try load(url)
    } throws: { error in
      let text = (error as? KeyFileError)?.description ?? ""
      return text.contains("u.conf:3") && text.contains(reason)
    }
  }

  @Test(arguments: [
    "https://backend.example:8443/trips?page=1", "http://127.0.0.1:8080/trips", "https://[::1]:8443/x",
    "mqtts://broker.example:8883", "mqtt://10.0.0.1",
  ])
  func aUsableURLLoads(_ url: String) throws {
    #expect(try load(url).uploadURL == url)
  }

  /// The `[GZone]` URLs are checked too, with their placeholders filled in, at their own line.
  @Test func aGZoneURLIsCheckedAtItsLine() {
    let text = """
      [GZone]
      ExperienceLevelsURL = https://h/levels
      PlayerURL = https://h/players/{unitId}
      AvailableGamesURL = https://h:70000/games
      GameRoundsURL = https://h/rounds
      UnitId = 4711
      """
    #expect {
      _ = try DaemonConfiguration.parseChecked(text, file: "g.conf")
    } throws: { error in
      (error as? KeyFileError)?.description.hasPrefix("g.conf:4: AvailableGamesURL is refused") == true
    }
    let fixed = text.replacingOccurrences(
      of: "https://h:70000/games", with: "https://h/players/{unitId}/games")
    #expect(throws: Never.self) { _ = try DaemonConfiguration.parseChecked(fixed, file: "g.conf") }
  }

  /// The fleet link's own broker is checked the same way, at its line in `[Fleet]`.
  @Test(arguments: [("mqtt://bro ker.example", "libcurl"), ("mqtts://broker\u{202E}.example", "U+202E")])
  func aFleetURLIsCheckedAtItsLine(_ url: String, _ reason: String) {
    #expect {
      _ = try DaemonConfiguration.parseChecked("[Fleet]\nBoxId = van-7\nURL = \(url)\n", file: "f.conf")
    } throws: { error in
      let text = (error as? KeyFileError)?.description ?? ""
      return text.contains("f.conf:3") && text.contains(reason)
    }
    #expect(
      throws: Never.self,
      performing: {
        _ = try DaemonConfiguration.parseChecked(
          "[Fleet]\nBoxId = van-7\nURL = mqtts://broker.example:8883\n", file: "f.conf")
      })
  }

  /// libcurl's answer comes from the child: the refusal names what libcurl said.
  @Test func theReasonIsLibcurls() {
    let problem = URLCheck.problem("https://backend.example:99999/")
    #expect(problem?.contains("libcurl's URL parser") == true, "\(problem ?? "nil")")
    #expect(problem?.lowercased().contains("port") == true, "\(problem ?? "nil")")
  }
}
