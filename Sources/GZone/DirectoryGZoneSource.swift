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
    // stat(2) never opens: a FIFO given as the folder is named, not waited on.
    var info = stat()
    guard stat(directory, &info) == 0 else {
      throw GZoneError(.unreadable, origin: path, "no such folder \(directory.escapingControlCharacters)")
    }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw GZoneError(
        .unreadable, origin: path,
        "\(directory.escapingControlCharacters) is \(RegularFile.kind(info.st_mode)), not a folder")
    }
    // RegularFile.open refuses a FIFO, a device or a folder in the payload's place.
    do { return Data(try InputReader.read(path, limit: Self.maximumFileSize)) } catch {
      if error.code == ENOENT { throw GZoneError(.unreadable, origin: path, "no such file") }
      if error.kind == "a directory" { throw GZoneError(.unreadable, origin: path, "a folder, not a file") }
      throw GZoneError(.unreadable, origin: path, "cannot read it: \(error.reason)")
    }
  }

  /// A payload file larger than this is refused unread (16 MiB).
  public static let maximumFileSize = 16 << 20
}
