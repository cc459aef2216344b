import BeaconCore

/// One health check, as the seed app's DiagnosticsViewModel reports them.
public struct HealthCheck: Hashable, Sendable {
  public enum Category: String, Hashable, Sendable, CaseIterable {
    case permissions = "Permissions"
    case bluetooth = "Bluetooth"
    case configuration = "Configuration"
    case storage = "Storage"
    case upload = "Upload"
  }

  public enum Status: String, Hashable, Sendable, Comparable {
    case ok, warning, critical

    private var rank: Int {
      switch self {
      case .ok: 0
      case .warning: 1
      case .critical: 2
      }
    }

    public static func < (lhs: Status, rhs: Status) -> Bool { lhs.rank < rhs.rank }
  }

  public var category: Category
  public var name: String
  public var status: Status
  public var detail: String
  public var recommendation: String?

  public init(_ category: Category, _ name: String, _ status: Status, _ detail: String, fix: String? = nil) {
    self.category = category
    self.name = name
    self.status = status
    self.detail = detail
    self.recommendation = fix
  }
}

/// The checks and the overall status: what `Doctor.evaluate` returns, as text or JSON.
public struct HealthReport: Sendable {
  public var checks: [HealthCheck]

  public var overall: HealthCheck.Status { checks.map(\.status).max() ?? .ok }

  /// 0 ok, 2 warning, 1 critical (a failure, as everywhere in the CLI).
  public var exitStatus: Int32 {
    switch overall {
    case .ok: 0
    case .warning: 2
    case .critical: 1
    }
  }

  public var json: JSONValue {
    .object([
      "overall": .string(overall.rawValue),
      "checks": .array(
        checks.map { check in
          .object([
            "category": .string(check.category.rawValue), "name": .string(check.name),
            "status": .string(check.status.rawValue), "detail": .string(check.detail),
            "recommendation": check.recommendation.map { .string($0) } ?? .null,
          ])
        }),
    ])
  }

  public var text: String {
    var out = ""
    for category in HealthCheck.Category.allCases {
      let mine = checks.filter { $0.category == category }
      guard !mine.isEmpty else { continue }
      out += "\(category.rawValue)\n"
      for check in mine {
        let mark =
          switch check.status {
          case .ok: "ok      "
          case .warning: "WARNING "
          case .critical: "CRITICAL"
          }
        out += "  \(mark)  \(check.name): \(check.detail)\n"
        if let fix = check.recommendation, check.status != .ok { out += "            → \(fix)\n" }
      }
    }
    out += "\nOverall: \(overall.rawValue)\n"
    return out
  }
}
