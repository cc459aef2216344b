import BeaconCrypto
import BeaconTestSupport

func key(_ hex: String) -> AES128Key { try! AES128Key(hex: hex) }

func uint64(_ hex: String) -> UInt64 { UInt64(hex, radix: 16)! }

func address(_ text: String) -> UInt64 { uint64(text.replacingOccurrences(of: ":", with: "")) }

func exponent(_ k: UInt8) -> RotationExponent { RotationExponent(rawValue: k)! }
