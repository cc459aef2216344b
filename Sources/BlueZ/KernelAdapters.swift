import FoundationEssentials

/// The Bluetooth controllers the kernel has (`/sys/class/bluetooth/hciN`), whether or not
/// bluetoothd runs: what tells "no adapter" from "bluetoothd not running".
public enum KernelAdapters {
  public static func names(sysfs: String = "/sys/class/bluetooth") -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: sysfs)) ?? []
    // hciN, not the hciN:M connection entries.
    return entries.filter { $0.hasPrefix("hci") && !$0.contains(":") }.sorted()
  }
}
