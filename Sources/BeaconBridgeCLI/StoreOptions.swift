import BridgeDaemon
import Foundation

/// Options every command that opens the store shares.
struct StoreOptions: Sendable {
  var stateDir: String?

  init(_ arguments: inout Arguments) throws(UsageError) {
    // An empty path would silently mean the default directory: Arguments.option refuses it.
    stateDir = try arguments.option("--state-dir")
  }

  var directory: String {
    StateDirectory.resolve(option: stateDir, environment: ProcessInfo.processInfo.environment)
  }

  static let help = """
      --state-dir DIR  Where the store lives (default: $BEACONBRIDGE_STATE_DIR, $STATE_DIRECTORY,
                       or /var/lib/beaconbridge).
    """

  /// Opens the store to read it only (`Store(readingOnly:)`): a missing directory or store is
  /// "not found", nothing is created or written, and a read-only directory is read.
  func openExisting(_ console: any Console) -> Store? {
    do throws(StateDirectoryError) {
      try StateDirectory.requireExisting(directory, store: true)
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return nil
    }
    do {
      return try Store(readingOnly: directory)
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return nil
    }
  }

  /// Writes the store under the state directory's lock (`StateLock`), creating both when
  /// missing: a daemon on another bus, or another CLI write, owns the directory meanwhile.
  /// Returns nil, having said why, when the store cannot be opened or the lock is held.
  func write<T>(_ console: any Console, _ body: (Store) async throws -> T) async -> T? {
    let lock: StateLock
    do {
      try StateDirectory.prepare(directory)
      lock = try StateLock.acquire(
        directory: directory, holder: "beaconbridge (a CLI write)", wait: .seconds(2))
    } catch {
      console.err("beaconbridge: \(error)\n")
      return nil
    }
    defer { withExtendedLifetime(lock) {} }
    guard let store = open(console) else { return nil }
    do { return try await body(store) } catch {
      console.err("beaconbridge: \(error)\n")
      return nil
    }
  }

  private func open(_ console: any Console) -> Store? {
    do {
      return try Store(directory: directory)
    } catch {
      // The message names the cause and the fix (StateDirectoryError, StoreError).
      console.err("beaconbridge: \(error.description)\n")
      return nil
    }
  }
}
