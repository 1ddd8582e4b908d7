import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// `restart_request` (issue 32, docs/protocol.md): a side that cannot restart ICE in place asks its peer to. Relayed
/// verbatim with `from` like offer/answer; `reason` must be a string, and a bad payload is refused and not relayed.
@Suite struct RestartRequestRelayTests {
    @Test(
        "relayed to the other participant verbatim (unknown fields too), with from",
        arguments: [
            ["reason": "mediaStall"], ["reason": "escalation", "extra": 1],
        ] as [JSONValue])
    func relayedVerbatimWithFrom(_ payload: JSONValue) throws {
        var room = try TwoInARoom()
        let aCid = try #require(room.core.connections[room.a]?.seat?.cid)
        let outputs = room.core.handle(.message(room.a, Envelope(.restartRequest, payload: payload)), nowMs: 1_000)
        let relayed = try #require(TwoInARoom.sent(outputs, to: room.b).first)
        #expect(relayed.messageType == .restartRequest)
        #expect(relayed.payload["reason"] == payload["reason"])
        #expect(relayed.payload["extra"] == payload["extra"])
        #expect(relayed.payload["from"] == .string(aCid))
        #expect(TwoInARoom.sent(outputs, to: room.a).isEmpty)
    }

    @Test(
        "a payload without a string reason is BAD_REQUEST, and nothing is relayed",
        arguments: [
            JSONValue.object([:]), ["reason": 7], ["reason": .null], .array([]),
        ])
    func aBadPayloadIsABadRequestAndNothingIsRelayed(_ payload: JSONValue) throws {
        var room = try TwoInARoom()
        let outputs = room.core.handle(.message(room.a, Envelope(.restartRequest, payload: payload)), nowMs: 1_000)
        #expect(TwoInARoom.sent(outputs, to: room.b).isEmpty, "nothing relayed")
        let error = try #require(TwoInARoom.sent(outputs, to: room.a).first)
        #expect(error.messageType == .error)
        #expect(error.payload["code"] == "BAD_REQUEST")
    }
}
