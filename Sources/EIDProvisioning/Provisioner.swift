import BeaconCrypto

/// Drives a `ProvisioningMachine` over a `GATTTransport`: each read and write within `timeout`,
/// and a relock attempted after any failure once the beacon may be unlocked. The caller owns the
/// connection (and closes it whatever happens).
public struct Provisioner: Sendable {
  /// The time each GATT read or write may take.
  public let timeout: Duration

  public init(timeout: Duration = .seconds(10)) {
    self.timeout = timeout
  }

  /// The registration, or the sentence of the step that failed.
  public func run(_ machine: consuming ProvisioningMachine, over transport: some GATTTransport) async
    -> Result<
      ProvisioningMachine.Registration, ProvisioningError
    >
  {
    var machine = machine
    var action = machine.start()
    while true {
      switch action {
      case .finished(let registration): return .success(registration)
      case .failed(let error):
        if machine.owesRelock {
          // Best effort: the sentence is the first failure's. A beacon with automatic relock
          // locks itself when the connection closes in any case.
          try? await transport.write(.lockState, [0x00], timeout: timeout)
        }
        return .failure(error)
      case .read(let characteristic, _):
        do throws(GATTError) {
          action = machine.handle(.success(try await transport.read(characteristic, timeout: timeout)))
        } catch {
          action = machine.handle(.failure(error))
        }
      case .write(let characteristic, let value, _):
        do throws(GATTError) {
          try await transport.write(characteristic, value, timeout: timeout)
          action = machine.handle(.success([]))
        } catch {
          action = machine.handle(.failure(error))
        }
      }
    }
  }
}

extension ProvisioningMachine.Method {
  /// The less secure method's key: the identity key read from a key file (its 32 hex digits, as
  /// UTF-8), and that key's 16 bytes encrypted with the lock key (AES-128-ECB), as the 18-byte
  /// registration carries it. The bytes are the key's in the order the key file writes them,
  /// which is the order the EID computation uses; the read-back check refuses a beacon that
  /// takes them otherwise.
  public static func sharedKey(hexUTF8 digits: UnsafeRawBufferPointer, lockKey: AES128Key)
    throws(KeyFormatError)
    -> ProvisioningMachine.Method
  {
    _ = try AES128Key(hexUTF8: digits)
    let key = SecretBytes.withScratch(count: 16) { raw -> IdentityKeyBytes in
      var n = 0
      var high = true
      for byte in digits where n < 16 {
        let value: UInt8
        switch byte {
        case 0x30...0x39: value = byte - 0x30
        case 0x41...0x46: value = byte - 0x41 + 10
        case 0x61...0x66: value = byte - 0x61 + 10
        default: continue
        }
        if high {
          raw[n] = value << 4
        } else {
          raw[n] |= value
          n += 1
        }
        high.toggle()
      }
      return IdentityKeyBytes(UnsafeRawBufferPointer(raw))!
    }
    let encrypted = key.withBytes { lockKey.encrypt(AESBlock(bytes: $0)!).bytes }
    return .sharedKey(identityKey: key, encryptedWithLockKey: encrypted)
  }
}
