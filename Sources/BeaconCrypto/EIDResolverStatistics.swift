/// What the resolver did, for `status`, `doctor` and the tests. Counts only grow.
public struct EIDResolverStatistics: Equatable, Sendable {
  /// EIDs looked up.
  public var lookups = 0
  /// Answered from the table of expected EIDs without any AES.
  public var cacheHits = 0
  /// Searches over the tolerance, and searches refused by the budget.
  public var searches = 0
  public var searchesDeferred = 0
  /// Answered from the negative cache.
  public var negativeHits = 0
  public var resolved = 0
  public var replaysRefused = 0
  public var unknown = 0
  /// AES-128 block encryptions and key expansions (each temporary key is one of each).
  public var blockEncryptions = 0
  public var keyExpansions = 0
}
