import BeaconCore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Where the four payloads come from, in the `ScopeHost` style: the host performs the requests
/// (reading files, or authenticated HTTP) and hands back the raw bytes; the module parses,
/// checks and derives.
public protocol GZoneSource: Sendable {
  /// Performs one request and returns the payload's raw `rawResponse` bytes. Throwing fails the
  /// whole load.
  func fetch(_ payload: GZonePayload) async throws -> Data

  /// Where a payload comes from (a file path or a URL), for errors.
  func origin(of payload: GZonePayload) -> String
}

extension GZoneSource {
  /// Loads the four payloads in parallel (the seed: "independent and can run in parallel").
  ///
  /// The load succeeds or fails as a whole: on the first failure the other requests are
  /// cancelled and that failure is thrown, naming its payload's origin.
  public func load() async throws(GZoneError) -> GZoneLoad {
    let result: Result<[GZonePayload: JSONValue], GZoneError> = await withTaskGroup(
      of: Result<(GZonePayload, JSONValue), GZoneError>.self
    ) { group in
      for payload in GZonePayload.allCases {
        group.addTask {
          let origin = self.origin(of: payload)
          let data: Data
          do { data = try await self.fetch(payload) } catch let error as GZoneError {
            return .failure(error)
          } catch {
            return .failure(GZoneError(.unreadable, origin: origin, "\(error)"))
          }
          do throws(GZoneError) {
            return .success((payload, try GZoneLoad.parse(data, as: payload, origin: origin)))
          } catch {
            return .failure(error)
          }
        }
      }
      var values: [GZonePayload: JSONValue] = [:]
      for await outcome in group {
        switch outcome {
        case .success(let (payload, value)): values[payload] = value
        case .failure(let error):
          group.cancelAll()
          return .failure(error)
        }
      }
      return .success(values)
    }
    let values = try result.get()
    return try GZoneLoad(
      experienceLevels: values[.experienceLevels] ?? .null, player: values[.player] ?? .null,
      availableGames: values[.availableGames] ?? .null, gameRounds: values[.gameRounds] ?? .null,
      origin: origin(of:))
  }
}
