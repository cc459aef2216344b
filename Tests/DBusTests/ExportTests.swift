import DBus
import DBusTestSupport
import Testing

@Suite(.privateBus, .timeLimit(.minutes(2)))
struct ExportTests {
  @Test func exportedObjectAnswersCalls() async throws {
    let address = try PrivateBusTrait.bus().busAddress
    let server = try Connection(address)
    defer { server.close() }
    let client = try Connection(address)
    defer { client.close() }
    let object = try server.export("/org/example/app", subtree: true) { call in
      switch call.member {
      case "Echo": return .success(call.body)
      case "Fail": return .failure(DBusError("org.example.Error.Nope", "nope: \(call.path)"))
      default: return .failure(.unknownMethod(call))
      }
    }
    let dictionary = DBusValue.stringVariantDictionary(["Type": "or_patterns"])
    let echoed = try await client.call(
      destination: server.uniqueName, path: "/org/example/app/monitor0", interface: "org.example.App",
      member: "Echo",
      [dictionary, .objectPath("/org/bluez/hci0")])
    #expect(echoed == [dictionary, .objectPath("/org/bluez/hci0")])

    let failure = await #expect(throws: DBusError.self) {
      try await client.call(
        destination: server.uniqueName, path: "/org/example/app", interface: nil, member: "Fail")
    }
    #expect(failure?.name == "org.example.Error.Nope")
    #expect(failure?.message == "nope: /org/example/app")

    let unknown = await #expect(throws: DBusError.self) {
      try await client.call(
        destination: server.uniqueName, path: "/elsewhere", interface: "org.example.App", member: "Echo")
    }
    #expect(unknown?.name == .unknownMethod || unknown?.name == .unknownObject)

    object.unexport()
    let gone = await #expect(throws: DBusError.self) {
      try await client.call(
        destination: server.uniqueName, path: "/org/example/app", interface: nil, member: "Echo")
    }
    #expect(gone?.name == .unknownMethod || gone?.name == .unknownObject)
  }
}
