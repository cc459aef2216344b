/// The Eddystone Configuration GATT Service (google/eddystone configuration-service/README.md):
/// its UUIDs and the replies the provisioner reads, each parsed strictly. No imports, so the fuzz
/// harness (Fuzz/gatt-replies) builds this file alone.
public enum ConfigService {
  /// The service's UUID.
  public static let serviceUUID = "a3c87500-8ed3-4bdf-8a39-a01bebede295"

  /// The characteristics the provisioner uses, by their spec names.
  public enum Characteristic: String, CaseIterable, Sendable, CustomStringConvertible {
    case capabilities = "a3c87501-8ed3-4bdf-8a39-a01bebede295"
    case activeSlot = "a3c87502-8ed3-4bdf-8a39-a01bebede295"
    case lockState = "a3c87506-8ed3-4bdf-8a39-a01bebede295"
    case unlock = "a3c87507-8ed3-4bdf-8a39-a01bebede295"
    case publicECDHKey = "a3c87508-8ed3-4bdf-8a39-a01bebede295"
    case advSlotData = "a3c8750a-8ed3-4bdf-8a39-a01bebede295"

    /// The UUID, lower case, as BlueZ's GattCharacteristic1.UUID gives it.
    public var uuid: String { rawValue }

    public var description: String {
      switch self {
      case .capabilities: "Capabilities"
      case .activeSlot: "Active Slot"
      case .lockState: "Lock State"
      case .unlock: "Unlock"
      case .publicECDHKey: "Public ECDH Key"
      case .advSlotData: "ADV Slot Data"
      }
    }
  }

  /// The frame type byte of an Eddystone-EID slot.
  public static let eidFrameType: UInt8 = 0x30
  /// Capabilities' frame type bit for EID.
  public static let eidFrameBit: UInt16 = 0x0008

  /// Why a reply is not what the spec says the characteristic returns. The message says what
  /// came, never the bytes (a challenge or a key is not for a log).
  public struct ReplyError: Error, Equatable, Sendable, CustomStringConvertible {
    public let characteristic: Characteristic
    public let problem: String
    public var description: String { "its \(characteristic) reply \(problem)" }
  }

  /// Characteristic 1: version, slots, EID slots, capability bits, supported frame types
  /// (16-bit big-endian), then the supported Tx powers. At least 7 bytes.
  public struct Capabilities: Equatable, Sendable {
    public let version: UInt8
    public let maxSlots: UInt8
    public let maxEIDSlots: UInt8
    public let capabilityBits: UInt8
    public let frameTypes: UInt16
    public let txPowers: [Int8]

    public init(_ bytes: some Collection<UInt8>) throws(ReplyError) {
      let b = Array(bytes)
      guard b.count >= 7 else {
        throw ReplyError(
          characteristic: .capabilities, problem: "is \(b.count) bytes; the spec gives at least 7")
      }
      version = b[0]
      maxSlots = b[1]
      maxEIDSlots = b[2]
      capabilityBits = b[3]
      frameTypes = UInt16(b[4]) << 8 | UInt16(b[5])
      txPowers = b[6...].map { Int8(bitPattern: $0) }
    }

    /// EID in the frame types and at least one EID slot.
    public var supportsEID: Bool { frameTypes & eidFrameBit != 0 && maxEIDSlots > 0 && maxSlots > 0 }
  }

  /// Characteristic 6, read: 0x00 locked, 0x01 unlocked, 0x02 unlocked with relock disabled.
  public enum LockState: UInt8, Equatable, Sendable {
    case locked = 0x00
    case unlocked = 0x01
    case unlockedRelockDisabled = 0x02

    public init(_ bytes: some Collection<UInt8>) throws(ReplyError) {
      guard bytes.count == 1, let state = LockState(rawValue: bytes.first!) else {
        throw ReplyError(
          characteristic: .lockState,
          problem: bytes.count == 1
            ? "is a state the spec does not define (0x00, 0x01 or 0x02)" : "is \(bytes.count) bytes, not 1")
      }
      self = state
    }
  }

  /// Characteristic 7, read: the 16-byte one-time challenge.
  public static func challenge(_ bytes: some Collection<UInt8>) throws(ReplyError) -> [UInt8] {
    guard bytes.count == 16 else {
      throw ReplyError(characteristic: .unlock, problem: "is \(bytes.count) bytes, not the 16 of a challenge")
    }
    return Array(bytes)
  }

  /// Characteristic 2, read: one byte, the slot number.
  public static func activeSlot(_ bytes: some Collection<UInt8>) throws(ReplyError) -> UInt8 {
    guard bytes.count == 1 else {
      throw ReplyError(characteristic: .activeSlot, problem: "is \(bytes.count) bytes, not 1")
    }
    return bytes.first!
  }

  /// Characteristic 8, read: the beacon's 32-byte X25519 public key, little-endian.
  public static func publicKey(_ bytes: some Collection<UInt8>) throws(ReplyError) -> [UInt8] {
    guard bytes.count == 32 else {
      throw ReplyError(
        characteristic: .publicECDHKey, problem: "is \(bytes.count) bytes, not the 32 of a key")
    }
    return Array(bytes)
  }

  /// Characteristic 10, read: what the active slot broadcasts.
  public enum SlotData: Equatable, Sendable {
    /// Not broadcasting: an empty reply or a single 0x00.
    case empty
    /// An EID slot: 0x30, K, the beacon's 32-bit clock (big-endian), the 8-byte EID (14 bytes).
    case eid(rotationExponent: UInt8, clock: UInt32, eid: UInt64)
    /// Another frame (UID 0x00, URL 0x10, TLM 0x20, or anything else): its type byte.
    case other(frameType: UInt8)

    public init(_ bytes: some Collection<UInt8>) throws(ReplyError) {
      let b = Array(bytes)
      if b.isEmpty || b == [0x00] {
        self = .empty
        return
      }
      guard b[0] == eidFrameType else {
        self = .other(frameType: b[0])
        return
      }
      guard b.count == 14 else {
        throw ReplyError(
          characteristic: .advSlotData, problem: "is an EID slot of \(b.count) bytes; the spec gives 14")
      }
      guard b[1] <= 15 else {
        throw ReplyError(
          characteristic: .advSlotData, problem: "has a rotation exponent of \(b[1]); the spec gives 0 to 15")
      }
      let clock = b[2..<6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
      let eid = b[6..<14].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
      self = .eid(rotationExponent: b[1], clock: clock, eid: eid)
    }
  }
}
