import Crypto
import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// The room logic as a pure value: time is an argument, so timeouts are tested at their edges.
@Suite struct SignalingCoreTests {
    let authorities = SignalingCore.Authorities.forTests()

    func makeCore(eviction: Int64 = 600_000) -> SignalingCore {
        var settings = SignalingCore.Settings()
        settings.evictionTimeoutMs = eviction
        return SignalingCore(settings: settings, authorities: authorities, seed: 42)
    }

    func join(_ core: inout SignalingCore, _ connection: ConnectionID, rid: String, now: Int64, payload: JoinPayload = JoinPayload()) throws
        -> JoinedPayload
    {
        try core.joinedForTest(connection, rid: rid, now: now, payload: payload)
    }

    @Test func evictionHappensAtTheTimeoutNotBefore() throws {
        var core = makeCore(eviction: 10_000)
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = core.handle(.opened(b, .ws, sid: nil), nowMs: 0)
        _ = try join(&core, a, rid: rid, now: 0)
        _ = try join(&core, b, rid: rid, now: 0)
        _ = core.handle(.closed(b), nowMs: 1_000)
        #expect(core.participantCount(.suspended) == 1)
        _ = core.handle(.tick, nowMs: 10_999)
        #expect(core.occupancy(of: rid) == 2, "1 ms before the timeout the seat is kept")
        let outputs = core.handle(.tick, nowMs: 11_000)
        #expect(core.occupancy(of: rid) == 1)
        #expect(core.participantCount(.suspended) == 0)
        #expect(outputs.contains { if case .event(.left(rid, _, "evicted")) = $0 { true } else { false } })
        // The remaining participant is told, and is now the host.
        let state = outputs.compactMap { output -> RoomStatePayload? in
            guard case .send(a, let envelope) = output, envelope.messageType == .roomState else { return nil }
            return try? envelope.payload.decode(RoomStatePayload.self)
        }.last
        #expect(state?.participants.count == 1)
        #expect(state?.hostCid == core.connections[a]?.seat?.cid)
    }

    @Test func tombstoneExpiresAfterFiveMinutes() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = try join(&core, a, rid: rid, now: 0)
        _ = core.handle(.message(a, Envelope(.endRoom)), nowMs: 1_000)
        _ = core.handle(.tick, nowMs: 300_999)
        let refused = core.handle(.message(a, Envelope(.join, rid: rid)), nowMs: 300_999)
        #expect(refused.contains { if case .send(_, let e) = $0 { e.payload["code"] == "ROOM_ENDED" } else { false } })
        _ = core.handle(.tick, nowMs: 301_000)
        let joined = try join(&core, a, rid: rid, now: 301_000)
        #expect(joined.reconnect == .fresh)
    }

    /// A guest away (suspended) when the host ends the room comes back with its token: after the tombstone is gone
    /// (400 s, token still valid) and after both the tombstone and the token are long gone (30 min), it is told
    /// ROOM_ENDED and no room is made again.
    @Test(arguments: [400_000, 1_800_000] as [Int64]) func aSeatOfAnEndedRoomNeverComesBack(backAtMs: Int64) throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        let later = ConnectionID(3)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = core.handle(.opened(b, .ws, sid: nil), nowMs: 0)
        _ = try join(&core, a, rid: rid, now: 0)
        let guest = try join(&core, b, rid: rid, now: 0)
        let guestCid = try #require(core.connections[b]?.seat?.cid)
        _ = core.handle(.closed(b), nowMs: 500)
        _ = core.handle(.message(a, Envelope(.endRoom)), nowMs: 1_000)
        _ = core.handle(.tick, nowMs: backAtMs)
        _ = core.handle(.opened(later, .ws, sid: nil), nowMs: backAtMs)
        let recover = JoinPayload(reconnectCid: guestCid, reconnectToken: guest.reconnectToken)
        let answer = core.handle(.message(later, Envelope(.join, rid: rid, payload: try JSONValue(encoding: recover))), nowMs: backAtMs)
        #expect(answer.contains { if case .send(_, let e) = $0 { e.payload["code"] == "ROOM_ENDED" } else { false } })
        #expect(core.occupancy(of: rid) == 0, "no ghost room")
    }

    /// `SSELiveness`: a stream whose sid has POSTed nothing for two client ping intervals + the grace is closed
    /// and its seat suspended at once (the peer is told); a silent WebSocket is left to the transport's pings.
    @Test func silentSSEStreamIsClosedAndItsSeatSuspendedAtTheLimit() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = core.handle(.opened(b, .sse, sid: "S-0000000000000002"), nowMs: 0)
        _ = try join(&core, a, rid: rid, now: 0)
        _ = try join(&core, b, rid: rid, now: 0)
        _ = core.handle(.message(b, Envelope(.ping)), nowMs: 10_000)
        let limit = SSELiveness.silenceLimitMs
        #expect(limit == 2 * 12_000 + SSELiveness.graceMs)
        let early = core.handle(.tick, nowMs: 10_000 + limit - 1)
        #expect(!early.contains(.close(b, .silent)), "1 ms before the limit the stream is kept")
        #expect(core.participantCount(.suspended) == 0)
        let due = core.handle(.tick, nowMs: 10_000 + limit)
        #expect(due.contains(.close(b, .silent)))
        #expect(!due.contains { if case .close(a, _) = $0 { true } else { false } }, "the silent WebSocket is not the core's to close")
        #expect(core.participantCount(.suspended) == 1)
        let told = due.compactMap { output -> RoomStatePayload? in
            guard case .send(a, let envelope) = output, envelope.messageType == .roomState else { return nil }
            return try? envelope.payload.decode(RoomStatePayload.self)
        }.last
        #expect(told?.participants.contains { $0.connectionStatus == .suspended } == true, "the peer sees the suspension")
        // A relay to it is now answered, not lost.
        let relay = core.handle(.message(a, Envelope(.ice, rid: rid, payload: ["candidate": .null])), nowMs: 10_000 + limit)
        #expect(relay.contains { if case .send(a, let e) = $0 { e.messageType == .relayFailed } else { false } })
    }

    @Test func anEvictedSeatIsNotBroughtBackByItsToken() throws {
        var core = makeCore(eviction: 10_000)
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        let back = ConnectionID(3)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = core.handle(.opened(b, .ws, sid: nil), nowMs: 0)
        _ = try join(&core, a, rid: rid, now: 0)
        let guest = try join(&core, b, rid: rid, now: 0)
        let guestCid = try #require(core.connections[b]?.seat?.cid)
        _ = core.handle(.closed(b), nowMs: 1_000)
        _ = core.handle(.tick, nowMs: 11_000)  // evicted; its token is valid for 20 minutes more
        _ = core.handle(.opened(back, .ws, sid: nil), nowMs: 12_000)
        let recover = JoinPayload(reconnectCid: guestCid, reconnectToken: guest.reconnectToken)
        let refused = core.handle(.message(back, Envelope(.join, rid: rid, payload: try JSONValue(encoding: recover))), nowMs: 12_000)
        #expect(refused.contains { if case .send(_, let e) = $0 { e.payload["code"] == "INVALID_RECONNECT_TOKEN" } else { false } })
        #expect(core.roomView(rid)?.cids.contains(guestCid) == false)
        // It joins anew: a new participant id.
        let fresh = try join(&core, back, rid: rid, now: 12_000)
        #expect(fresh.reconnect == .fresh)
        #expect(core.connections[back]?.seat?.cid != guestCid)
    }

    @Test func reconnectTokenExpiresAtItsExpiry() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        let joined = try join(&core, a, rid: rid, now: 0)
        let cid = try #require(core.connections[a]?.seat?.cid)
        _ = core.handle(.opened(b, .sse, sid: "S-0000000000000001"), nowMs: 0)
        let payload = JoinPayload(reconnectCid: cid, reconnectToken: joined.reconnectToken)
        let late = core.handle(.message(b, Envelope(.join, rid: rid, payload: try JSONValue(encoding: payload))), nowMs: 1_200_000)
        #expect(late.contains { if case .send(_, let e) = $0 { e.payload["code"] == "INVALID_RECONNECT_TOKEN" } else { false } })
        let inTime = try join(&core, b, rid: rid, now: 1_199_999, payload: payload)
        #expect(inTime.reconnect == .reattached)
    }

    @Test func sseStreamReusingASeatedSidMustProveTheSeat() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let sid = "S-00000000000000aa"
        let owner = ConnectionID(1)
        let reuse = ConnectionID(2)
        _ = core.handle(.opened(owner, .sse, sid: sid), nowMs: 0)
        let joined = try join(&core, owner, rid: rid, now: 0)
        _ = core.handle(.opened(reuse, .sse, sid: sid), nowMs: 10)
        #expect(core.sseConnection(for: sid) == reuse)
        #expect(core.handle(.message(reuse, Envelope(.ping)), nowMs: 20) == [.unauthorized(reuse)])
        let cid = try #require(core.connections[owner]?.seat?.cid)
        let proven = try join(
            &core, reuse, rid: rid, now: 30, payload: JoinPayload(reconnectCid: cid, reconnectToken: joined.reconnectToken))
        #expect(proven.reconnect == .reattached)
        #expect(core.connections[owner]?.seat == nil, "the older transport lost the seat")
    }

    @Test func epochIncreasesOnEveryMembershipOrStatusChange() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        let c = ConnectionID(3)
        for id in [a, b, c] { _ = core.handle(.opened(id, .ws, sid: nil), nowMs: 0) }
        var epochs: [Int64] = []
        epochs.append(try join(&core, a, rid: rid, now: 0).epoch)
        let second = try join(&core, b, rid: rid, now: 0)
        epochs.append(second.epoch)
        _ = core.handle(.closed(b), nowMs: 1)
        let cidB = second.participants.last!.cid
        epochs.append(
            try join(&core, c, rid: rid, now: 2, payload: JoinPayload(reconnectCid: cidB, reconnectToken: second.reconnectToken)).epoch)
        #expect(epochs == [1, 2, 4], "join, join, suspend (3), reattach")
    }
}
