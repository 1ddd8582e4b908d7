import DuetProtocol
import DuetTestBasics
@testable import DuetRooms
import Testing

/// `restart_request` (issue 32, docs/protocol.md): a side that cannot restart ICE in place asks its peer to. Relayed
/// verbatim with `from` like offer/answer; `reason` must be a string, and a bad payload is refused and not relayed.
@Suite struct RestartRequestRelayTests {
    let authorities = SignalingCore.Authorities.forTests()

    func twoInARoom() throws -> (SignalingCore, ConnectionID, ConnectionID) {
        var core = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: 7)
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1), b = ConnectionID(2)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = core.handle(.opened(b, .ws, sid: nil), nowMs: 0)
        _ = try core.joinedForTest(a, rid: rid, now: 0, payload: JoinPayload())
        _ = try core.joinedForTest(b, rid: rid, now: 0, payload: JoinPayload())
        return (core, a, b)
    }

    func sent(_ outputs: [SignalingCore.Output], to connection: ConnectionID) -> [Envelope] {
        outputs.compactMap { if case .send(connection, let envelope) = $0 { envelope } else { nil } }
    }

    @Test("relayed to the other participant verbatim (unknown fields too), with from", arguments: [
        ["reason": "mediaStall"], ["reason": "escalation", "extra": 1],
    ] as [JSONValue])
    func relayedVerbatimWithFrom(_ payload: JSONValue) throws {
        var (core, a, b) = try twoInARoom()
        let aCid = try #require(core.connections[a]?.seat?.cid)
        let outputs = core.handle(.message(a, Envelope(.restartRequest, payload: payload)), nowMs: 1_000)
        let relayed = try #require(sent(outputs, to: b).first)
        #expect(relayed.messageType == .restartRequest)
        #expect(relayed.payload["reason"] == payload["reason"])
        #expect(relayed.payload["extra"] == payload["extra"])
        #expect(relayed.payload["from"] == .string(aCid))
        #expect(sent(outputs, to: a).isEmpty)
    }

    @Test("a payload without a string reason is BAD_REQUEST naming the field, and nothing is relayed", arguments: [
        JSONValue.object([:]), ["reason": 7], ["reason": .null], .array([]),
    ])
    func aBadPayloadIsABadRequestAndNothingIsRelayed(_ payload: JSONValue) throws {
        var (core, a, b) = try twoInARoom()
        let outputs = core.handle(.message(a, Envelope(.restartRequest, payload: payload)), nowMs: 1_000)
        #expect(sent(outputs, to: b).isEmpty, "nothing relayed")
        let error = try #require(sent(outputs, to: a).first)
        #expect(error.messageType == .error)
        #expect(error.payload["code"] == "BAD_REQUEST")
    }
}
