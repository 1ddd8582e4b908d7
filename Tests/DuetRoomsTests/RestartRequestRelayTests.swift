import DuetProtocol
import DuetTestBasics
@testable import DuetRooms
import Testing

/// `restart_request` (issue 32, docs/protocol.md): "please make an ICE restart offer", from the side that answered
/// the connection's first offer. Relayed verbatim with `from` like offer/answer; `reason` must be a string and
/// `askedBack`, when present, a boolean.
@Suite struct RestartRequestRelayTests {
    func twoInARoom() throws -> (SignalingCore, ConnectionID, ConnectionID) {
        let room = try TwoInARoom()
        return (room.core, room.a, room.b)
    }

    func sent(_ outputs: [SignalingCore.Output], to connection: ConnectionID) -> [Envelope] { TwoInARoom.sent(outputs, to: connection) }

    @Test(arguments: [["reason": "iceFailed"], ["reason": "peerRequest", "askedBack": true]] as [JSONValue])
    func relayedVerbatimWithFrom(_ payload: JSONValue) throws {
        var (core, a, b) = try twoInARoom()
        let aCid = try #require(core.connections[a]?.seat?.cid)
        let outputs = core.handle(.message(a, Envelope(.restartRequest, payload: payload)), nowMs: 1_000)
        let relayed = try #require(sent(outputs, to: b).first)
        #expect(relayed.messageType == .restartRequest)
        #expect(relayed.payload["reason"] == payload["reason"])
        #expect(relayed.payload["askedBack"] == payload["askedBack"])
        #expect(relayed.payload["from"] == .string(aCid))
        #expect(sent(outputs, to: a).isEmpty)
    }

    @Test(arguments: [JSONValue.object([:]), ["reason": 7], ["reason": .null], ["reason": "iceFailed", "askedBack": "yes"]])
    func aBadPayloadIsABadRequestAndNothingIsRelayed(_ payload: JSONValue) throws {
        var (core, a, b) = try twoInARoom()
        let outputs = core.handle(.message(a, Envelope(.restartRequest, payload: payload)), nowMs: 1_000)
        #expect(sent(outputs, to: b).isEmpty, "nothing relayed")
        let error = try #require(sent(outputs, to: a).first)
        #expect(error.messageType == .error)
        #expect(error.payload["code"] == "BAD_REQUEST")
        let names = ["reason", "askedBack"].filter { error.payload["message"]?.stringValue?.contains($0) == true }
        #expect(!names.isEmpty, "\(error.payload)")
    }
}
