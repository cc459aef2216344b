/// Where the daemon keeps its store (DESIGN §4): `--state-dir`, else `BEACONBRIDGE_STATE_DIR`,
/// else systemd's `STATE_DIRECTORY`, else `/var/lib/beaconbridge`.
public enum StateDirectory {
  public static let defaultPath = "/var/lib/beaconbridge"

  public static func resolve(option: String?, environment: [String: String]) -> String {
    if let option, !option.isEmpty { return option }
    if let explicit = environment["BEACONBRIDGE_STATE_DIR"], !explicit.isEmpty { return explicit }
    // systemd may list several directories, separated by colons; ours is the first.
    if let systemd = environment["STATE_DIRECTORY"], let first = systemd.split(separator: ":").first {
      return String(first)
    }
    return defaultPath
  }
}
