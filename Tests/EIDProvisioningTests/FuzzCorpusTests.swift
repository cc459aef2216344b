import BeaconCrypto
import EIDProvisioning
import Foundation
import Testing

/// Fuzz/gatt-replies/corpus (the seeds, and any crasher the fuzzer finds, kept there) through the
/// same readers and machine as the harness: nothing traps, the machine always ends, and the
/// whole-exchange seed reaches the read-back, so the fuzzer starts from the full path.
@Suite struct FuzzCorpusTests {
  static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fuzz/gatt-replies/corpus")

  /// The harness's framing: a length byte, then that many bytes; 0xFF and a byte is an error.
  func lastStep(_ bytes: [UInt8]) -> ProvisioningError.Step? {
    var machine = ProvisioningMachine(
      lockKey: try! AES128Key(hex: "00112233445566778899aabbccddeeff"),
      method: .keyExchange(X25519PrivateKey(bytes: [UInt8](repeating: 0x42, count: 32))!),
      rotationExponent: 10)
    var action = machine.start()
    var offset = 0
    for _ in 0..<2_000 {
      switch action {
      case .finished: return nil
      case .failed(let error): return error.step
      case .write: action = machine.handle(.success([]))
      case .read:
        guard offset < bytes.count else {
          action = machine.handle(.failure(.disconnected))
          continue
        }
        let length = Int(bytes[offset])
        offset += 1
        if length == 0xFF {
          offset += 1
          action = machine.handle(.failure(.timeout))
          continue
        }
        let end = min(bytes.count, offset + length)
        action = machine.handle(.success(Array(bytes[offset..<end])))
        offset = end
      }
    }
    Issue.record("the machine did not end")
    return nil
  }

  @Test func everyCorpusInputIsReadAndEnds() throws {
    let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
    #expect(names.count >= 8)
    for name in names {
      let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(name)))
      _ = try? ConfigService.Capabilities(bytes)
      _ = try? ConfigService.LockState(bytes)
      _ = try? ConfigService.SlotData(bytes)
      let step = lastStep(bytes)
      if name == "exchange" {
        // The seed's beacon key is not the one its slot data was made with: refused at read-back.
        #expect(step == .readingBack, "\(name)")
      }
    }
  }

  @Test func theSeedsReadAsTheirCharacteristics() throws {
    func seed(_ name: String) throws -> [UInt8] {
      [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(name)))
    }
    #expect(try ConfigService.Capabilities(seed("capabilities")).supportsEID)
    #expect(try ConfigService.LockState(seed("lock-state")) == .locked)
    #expect(try ConfigService.challenge(seed("challenge")).count == 16)
    #expect(try ConfigService.publicKey(seed("public-key")).count == 32)
    #expect(
      try ConfigService.SlotData(seed("slot-eid"))
        == .eid(rotationExponent: 10, clock: 65_280, eid: 0x0102_0304_0506_0708))
    #expect(try ConfigService.SlotData(seed("slot-url")) == .other(frameType: 0x10))
  }
}
