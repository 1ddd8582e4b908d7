import DuetProtocol
import DuetTestBasics
@testable import DuetRooms
import Testing

/// `verify_failed` (a verified call's "your description failed my check", docs/protocol.md): relayed to the other
/// participant verbatim with `from`, like offer/answer/ice, so both pages end the call; its `auth` must be a string.
@Suite struct VerifyFailedRelayTests {
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

    @Test func relayedVerbatimWithFrom() throws {
        var (core, a, b) = try twoInARoom()
        let aCid = try #require(core.connections[a]?.seat?.cid)
        let outputs = core.handle(.message(a, Envelope(.verifyFailed, payload: ["auth": "n0-jYMiLYtgV9TygfKPDgSIZd76um0ZMEVFVNXpjyPE"])), nowMs: 1_000)
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
