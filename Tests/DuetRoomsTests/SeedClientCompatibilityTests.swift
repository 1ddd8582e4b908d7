import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// What the seed system's own clients send (found with its load tester, issue 33): a `join` carrying a
/// `reconnectCid` but no token, and a `ping` without `ts`.
@Suite struct SeedClientCompatibilityTests {
    @Test func aReconnectCidWithoutATokenIsAFreshJoin() throws {
        let authorities = SignalingCore.Authorities.forTests()
        var core = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: 7)
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        var payload = JoinPayload()
        payload.reconnectCid = "C-someone-else-entirely"
        let joined = try core.joinedForTest(a, rid: rid, now: 0, payload: payload)
        #expect(joined.reconnect == .fresh)
        #expect(core.connections[a]?.seat?.cid != "C-someone-else-entirely", "a cid is never taken on its word")
        #expect(core.connections[a]?.seat?.rid == rid, "the socket holds a seat")
        // The same join sent again (join recovery) is answered again: the seat is kept, not swapped for a third.
        let seat = core.connections[a]?.seat?.cid
        let again = try core.joinedForTest(a, rid: rid, now: 10, payload: payload)
        #expect(again.reconnect == .reattached)
        #expect(core.connections[a]?.seat?.cid == seat)
    }

    @Test func aPingWithoutTsGetsAPongWithoutTs() throws {
        var room = try TwoInARoom()
        let bare = TwoInARoom.sent(room.core.handle(.message(room.a, Envelope(.ping, payload: [:])), nowMs: 5), to: room.a)
        #expect(bare.count == 1 && bare[0].messageType == .pong)
        #expect(bare[0].payload["ts"] == nil, "no ts: null")
        #expect(!bare[0].encodedString().contains("null"))
        let echoed = TwoInARoom.sent(room.core.handle(.message(room.a, Envelope(.ping, payload: ["ts": 42])), nowMs: 5), to: room.a)
        #expect(echoed.first?.payload["ts"] == 42)
    }
}
