import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// `verify_failed` (a verified call's "your description failed my check", docs/protocol.md): relayed to the other
/// participant verbatim with `from`, like offer/answer/ice, so both pages end the call; its `auth` must be a string.
@Suite struct VerifyFailedRelayTests {
    func twoInARoom() throws -> (SignalingCore, ConnectionID, ConnectionID) {
        let room = try TwoInARoom()
        return (room.core, room.a, room.b)
    }

    func sent(_ outputs: [SignalingCore.Output], to connection: ConnectionID) -> [Envelope] { TwoInARoom.sent(outputs, to: connection) }

    @Test func relayedVerbatimWithFrom() throws {
        var (core, a, b) = try twoInARoom()
        let aCid = try #require(core.connections[a]?.seat?.cid)
        let outputs = core.handle(
            .message(a, Envelope(.verifyFailed, payload: ["auth": "n0-jYMiLYtgV9TygfKPDgSIZd76um0ZMEVFVNXpjyPE"])), nowMs: 1_000)
        let relayed = try #require(sent(outputs, to: b).first)
        #expect(relayed.messageType == .verifyFailed)
        #expect(relayed.payload["auth"] == "n0-jYMiLYtgV9TygfKPDgSIZd76um0ZMEVFVNXpjyPE")
        #expect(relayed.payload["from"] == .string(aCid))
        #expect(sent(outputs, to: a).isEmpty)
    }

    @Test(arguments: [JSONValue.object([:]), ["auth": 7], ["auth": .null]])
    func withoutAStringAuthItIsABadRequestNamingTheField(_ payload: JSONValue) throws {
        var (core, a, b) = try twoInARoom()
        let outputs = core.handle(.message(a, Envelope(.verifyFailed, payload: payload)), nowMs: 1_000)
        #expect(sent(outputs, to: b).isEmpty, "nothing relayed")
        let error = try #require(sent(outputs, to: a).first)
        #expect(error.messageType == .error)
        #expect(error.payload["code"] == "BAD_REQUEST")
        #expect(error.payload["message"]?.stringValue?.contains("auth") == true, "\(error.payload)")
    }
}
