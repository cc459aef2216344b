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
  /// cancelled, and the failure thrown is the first, in `GZonePayload.allCases` order, of the
  /// requests that failed on their own (not by that cancellation), naming its payload's origin.
  /// So the same payloads give the same error however the requests' finishing order falls
  /// (a missing folder fails all four: the first payload's file is named).
  public func load() async throws(GZoneError) -> GZoneLoad {
    let result: Result<[GZonePayload: JSONValue], GZoneError> = await withTaskGroup(
      of: (GZonePayload, Result<JSONValue, GZoneError>, cancelled: Bool).self
    ) { group in
      for payload in GZonePayload.allCases {
        group.addTask {
          let origin = self.origin(of: payload)
          let data: Data
          do { data = try await self.fetch(payload) } catch let error as GZoneError {
            return (payload, .failure(error), false)
          } catch is CancellationError {
            return (
              payload, .failure(GZoneError(.unreadable, origin: origin, "\(CancellationError())")), true
            )
          } catch {
            return (payload, .failure(GZoneError(.unreadable, origin: origin, "\(error)")), false)
          }
          do throws(GZoneError) {
            return (payload, .success(try GZoneLoad.parse(data, as: payload, origin: origin)), false)
          } catch {
            return (payload, .failure(error), false)
          }
        }
      }
      var values: [GZonePayload: JSONValue] = [:]
      var failures: [GZonePayload: GZoneError] = [:]
      var cancellations: [GZonePayload: GZoneError] = [:]
      for await (payload, outcome, cancelled) in group {
        switch outcome {
        case .success(let value): values[payload] = value
        case .failure(let error) where cancelled: cancellations[payload] = error
        case .failure(let error):
          failures[payload] = error
          group.cancelAll()
        }
      }
      // A cancellation counts only when no request failed on its own (the load itself was
      // cancelled).
      for errors in [failures, cancellations] {
        if let first = GZonePayload.allCases.first(where: { errors[$0] != nil }), let error = errors[first] {
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
