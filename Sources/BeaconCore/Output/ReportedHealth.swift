/// What a beacon said about itself (its last Eddystone-TLM, its URL) and the verdicts on it
/// (docs/dbus-api.md, "Beacon health"), as the `beaconHealth` and `telemetry` event lines, the
/// `BeaconHealth` signal, the daemon's `Status` and the fleet's beacon report say it. A figure
/// added here reaches every one of them.
public struct ReportedHealth: Sendable, Equatable {
  public enum Key: String {
    case batteryMv, temperatureC, advertisingCount, uptimeSeconds, telemetryAgeSeconds, url, reboots
    case batteryLow, silent, possibleClone, cloneAddresses
  }

  public var batteryMillivolts: Int?
  /// °C, to 0.01.
  public var temperature: Double?
  public var advertisingCount: Int?
  public var uptimeSeconds: Double?
  /// Seconds since the TLM was heard, to 0.1 s; the status gives it, an event line does not.
  public var telemetryAgeSeconds: Double?
  public var url: String?
  public var reboots: Int
  /// Below `lowBatteryMillivolts`, and not yet back above it by the hysteresis.
  public var batteryLow: Bool
  /// A paired beacon not seen for `silentAfter`.
  public var silent: Bool
  /// Its plain identity heard from two addresses at once, repeatedly; `cloneAddresses` are
  /// those addresses.
  public var possibleClone: Bool
  public var cloneAddresses: [String]

  public init(
    batteryMillivolts: Int? = nil, temperature: Double? = nil, advertisingCount: Int? = nil,
    uptimeSeconds: Double? = nil, telemetryAgeSeconds: Double? = nil, url: String? = nil, reboots: Int = 0,
    batteryLow: Bool = false, silent: Bool = false, possibleClone: Bool = false, cloneAddresses: [String] = []
  ) {
    self.batteryMillivolts = batteryMillivolts
    self.temperature = temperature
    self.advertisingCount = advertisingCount
    self.uptimeSeconds = uptimeSeconds
    self.telemetryAgeSeconds = telemetryAgeSeconds
    self.url = url
    self.reboots = reboots
    self.batteryLow = batteryLow
    self.silent = silent
    self.possibleClone = possibleClone
    self.cloneAddresses = cloneAddresses
  }

  /// `now` gives the telemetry's age.
  public init(_ health: BeaconHealth, now: Timestamp? = nil) {
    self.init(telemetry: health.telemetry)
    if let now { telemetryAgeSeconds = health.telemetry.map { Rounding.tenths(max(0, now - $0.heardAt)) } }
    url = health.url
    reboots = health.reboots
    batteryLow = health.batteryLow
    silent = health.silent
    possibleClone = health.possibleClone
    cloneAddresses = health.cloneAddresses.map(\.description)
  }

  /// The TLM's figures alone (a `telemetry` event line).
  public init(telemetry: Telemetry?) {
    self.init()
    guard let telemetry else { return }
    batteryMillivolts = telemetry.batteryMillivolts
    temperature = telemetry.temperature.map(Rounding.hundredths)
    advertisingCount = Int(telemetry.advertisingCount)
    uptimeSeconds = telemetry.uptime
  }

  /// The TLM's figures: `batteryMv`, `temperatureC`, `advertisingCount`, `uptimeSeconds`.
  public var telemetryFields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.add(.batteryMv, .of(batteryMillivolts))
    w.add(.temperatureC, .of(temperature))
    w.add(.advertisingCount, .of(advertisingCount))
    w.add(.uptimeSeconds, .of(uptimeSeconds))
    return w.fields
  }

  /// Every figure, in order; `telemetryAgeSeconds` only `withAge` (the status).
  public func fields(withAge: Bool) -> [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.merge(telemetryFields)
    if withAge { w.add(.telemetryAgeSeconds, .of(telemetryAgeSeconds)) }
    w.add(.url, .of(url))
    w.add(.reboots, .of(reboots))
    w.add(.batteryLow, .bool(batteryLow))
    w.add(.silent, .bool(silent))
    w.add(.possibleClone, .bool(possibleClone))
    w.add(.cloneAddresses, .array(cloneAddresses.map { .string($0) }))
    return w.fields
  }

  /// Reads the status's health (with `telemetryAgeSeconds`).
  public init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    batteryMillivolts = try r.optional(.batteryMv, FieldValue.int)
    temperature = try r.optional(.temperatureC, FieldValue.double)
    advertisingCount = try r.optional(.advertisingCount, FieldValue.int)
    uptimeSeconds = try r.optional(.uptimeSeconds, FieldValue.double)
    telemetryAgeSeconds = try r.optional(.telemetryAgeSeconds, FieldValue.double)
    url = try r.optional(.url, FieldValue.string)
    reboots = try r.int(.reboots)
    batteryLow = try r.bool(.batteryLow)
    silent = try r.bool(.silent)
    possibleClone = try r.bool(.possibleClone)
    cloneAddresses = try r.array(.cloneAddresses, FieldValue.string)
  }
}
