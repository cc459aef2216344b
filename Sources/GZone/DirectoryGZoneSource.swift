import BeaconCore
import Foundation

/// The payload folder of DESIGN §4: `experience-levels.json`, `player.json`,
/// `available-games.json` and `game-rounds.json`, each the raw `rawResponse` of its request.
/// For `gzone status` and `gzone diff`, and for tests.
public struct DirectoryGZoneSource: GZoneSource {
  public var directory: String

  public init(directory: String) {
    self.directory = directory
  }

  public func origin(of payload: GZonePayload) -> String {
    (directory as NSString).appendingPathComponent(payload.fileName)
  }

  public func fetch(_ payload: GZonePayload) async throws -> Data {
    let path = origin(of: payload)
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
      var folder: ObjCBool = false
      if !FileManager.default.fileExists(atPath: directory, isDirectory: &folder) || !folder.boolValue {
        throw GZoneError(.unreadable, origin: path, "no such folder \(directory)")
      }
      throw GZoneError(.unreadable, origin: path, "no such file")
    }
    guard !isDirectory.boolValue else { throw GZoneError(.unreadable, origin: path, "a folder, not a file") }
    do { return Data(try InputReader.read(path, limit: Self.maximumFileSize)) } catch {
      throw GZoneError(.unreadable, origin: path, "cannot read it: \(error.reason)")
    }
  }

  /// A payload file larger than this is refused unread (16 MiB).
  public static let maximumFileSize = 16 << 20
}
