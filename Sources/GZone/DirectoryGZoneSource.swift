import BeaconCore
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The payload folder of docs/DESIGN.md, Contracts: `experience-levels.json`, `player.json`,
/// `available-games.json` and `game-rounds.json`, each the raw `rawResponse` of its request.
/// For `gzone status` and `gzone diff`, and for tests.
public struct DirectoryGZoneSource: GZoneSource {
  public var directory: String

  public init(directory: String) {
    self.directory = directory
  }

  public func origin(of payload: GZonePayload) -> String {
    directory.hasSuffix("/") || directory.isEmpty
      ? directory + payload.fileName : directory + "/" + payload.fileName
  }

  public func fetch(_ payload: GZonePayload) async throws -> Data {
    let path = origin(of: payload)
    guard let isDirectory = Self.isDirectory(path) else {
      if Self.isDirectory(directory) != true {
        throw GZoneError(.unreadable, origin: path, "no such folder \(directory)")
      }
      throw GZoneError(.unreadable, origin: path, "no such file")
    }
    guard !isDirectory else { throw GZoneError(.unreadable, origin: path, "a folder, not a file") }
    do { return Data(try InputReader.read(path, limit: Self.maximumFileSize)) } catch {
      throw GZoneError(.unreadable, origin: path, "cannot read it: \(error.reason)")
    }
  }

  /// Whether `path` is a folder (following symbolic links); nil when nothing is there.
  static func isDirectory(_ path: String) -> Bool? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & S_IFMT == S_IFDIR
  }

  /// A payload file larger than this is refused unread (16 MiB).
  public static let maximumFileSize = 16 << 20
}
