import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// `media_state`: relayed with `from`, kept as the participant's `media` for `room_state`, never refused for a peer
/// that is away, and checked field by field (nothing but three booleans is kept).
@Suite struct MediaStateTests {
    let authorities = SignalingCore.Authorities.forTests()

    func makeCore() -> SignalingCore { SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: 7) }

    func join(_ core: inout SignalingCore, _ connection: ConnectionID, rid: String, now: Int64, payload: JoinPayload = JoinPayload()) throws
        -> JoinedPayload
    {
        try core.joinedForTest(connection, rid: rid, now: now, payload: payload)
    }

    func say(_ core: inout SignalingCore, _ connection: ConnectionID, _ payload: JSONValue, now: Int64 = 1_000) -> [SignalingCore.Output] {
        core.handle(.message(connection, Envelope(.mediaState, payload: payload)), nowMs: now)
    }

    /// A (connection 1, the host) and B (connection 2) in one room.
    func twoInARoom() throws -> (SignalingCore, String, ConnectionID, ConnectionID) {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = core.handle(.opened(b, .ws, sid: nil), nowMs: 0)
        _ = try join(&core, a, rid: rid, now: 0)
        _ = try join(&core, b, rid: rid, now: 0)
        return (core, rid, a, b)
    }

    static let muted: JSONValue = ["audio": false, "video": true, "screen": false]

    func sent(_ outputs: [SignalingCore.Output], to connection: ConnectionID) -> [Envelope] {
        outputs.compactMap { if case .send(connection, let envelope) = $0 { envelope } else { nil } }
    }

    @Test func relayedWithFromAndRepeatedInRoomState() throws {
        let (room, rid, a, b) = try twoInARoom()
        var core = room
        let aCid = try #require(core.connections[a]?.seat?.cid)
        let epochBefore = core.rooms[rid]?.epoch

        let outputs = say(&core, a, Self.muted)
        let relayed = try #require(sent(outputs, to: b).first)
        #expect(relayed.messageType == .mediaState)
        #expect(relayed.payload["from"] == .string(aCid))
        #expect(try relayed.payload.decode(MediaState.self) == MediaState(audio: false, video: true, screen: false))
        #expect(relayed.epoch == epochBefore, "state changes no membership: same epoch")
        #expect(sent(outputs, to: a).isEmpty, "nothing back to the sender")
        #expect(core.rooms[rid]?.epoch == epochBefore)

        // B drops and comes back: its room_state carries A's last state.
        _ = core.handle(.closed(b), nowMs: 2_000)
        let b2 = ConnectionID(3)
        _ = core.handle(.opened(b2, .ws, sid: nil), nowMs: 3_000)
        let bCid = try #require(core.rooms[rid]?.participants.first { $0.cid != aCid }?.cid)
        let token = authorities.reconnectTokens.issue(cid: bCid, rid: rid, nowMs: 3_000)
        let joined = try join(&core, b2, rid: rid, now: 3_000, payload: JoinPayload(reconnectCid: bCid, reconnectToken: token))
        #expect(joined.reconnect == .reattached)
        #expect(joined.participants.first { $0.cid == aCid }?.media == MediaState(audio: false, video: true, screen: false))
        #expect(joined.participants.first { $0.cid == bCid }?.media == nil, "B never said anything")
    }

    /// The mute said while the peer's seat is suspended (its connection dropped) is not relayed anywhere and not
    /// refused: no `relay_failed` (a relay's error, for offers), no error; the peer hears it when it reattaches.
    @Test func saidWhileThePeerIsSuspendedIsKeptForItsReturn() throws {
        let (room, rid, a, b) = try twoInARoom()
        var core = room
        let aCid = try #require(core.connections[a]?.seat?.cid)
        let bCid = try #require(core.connections[b]?.seat?.cid)
        _ = core.handle(.closed(b), nowMs: 2_000)
        #expect(core.participantCount(.suspended) == 1)

        let outputs = say(&core, a, Self.muted, now: 2_500)
        #expect(outputs.isEmpty, "B is away: nothing relayed, no relay_failed, no error — got \(outputs)")
        #expect(core.rooms[rid]?.participants.first { $0.cid == aCid }?.media == MediaState(audio: false, video: true, screen: false))

        let b2 = ConnectionID(3)
        _ = core.handle(.opened(b2, .ws, sid: nil), nowMs: 3_000)
        let token = authorities.reconnectTokens.issue(cid: bCid, rid: rid, nowMs: 3_000)
        let joined = try join(&core, b2, rid: rid, now: 3_000, payload: JoinPayload(reconnectCid: bCid, reconnectToken: token))
        #expect(joined.reconnect == .reattached)
        #expect(joined.participants.first { $0.cid == aCid }?.media == MediaState(audio: false, video: true, screen: false))
    }

    @Test func aPeerAwayIsNotAnErrorAndLearnsItOnJoining() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = try join(&core, a, rid: rid, now: 0)
        let alone = say(&core, a, Self.muted)
        #expect(alone.isEmpty, "alone in the room: kept, no relay_failed, no error — got \(alone)")
        _ = core.handle(.opened(b, .ws, sid: nil), nowMs: 2_000)
        let joined = try join(&core, b, rid: rid, now: 2_000)
        let aCid = try #require(core.connections[a]?.seat?.cid)
        #expect(joined.participants.first { $0.cid == aCid }?.media?.audio == false)
    }

    @Test(arguments: [
        (["audio": true, "video": true] as JSONValue, "screen"),
        (["audio": "yes", "video": true, "screen": false] as JSONValue, "audio"),
        (["audio": true, "video": 1, "screen": false] as JSONValue, "video"),
        ("muted" as JSONValue, "payload"),
    ])
    func aBadStateIsRefusedNamingTheFieldAndKeepsNothing(payload: JSONValue, field: String) throws {
        let (room, rid, a, b) = try twoInARoom()
        var core = room
        _ = say(&core, a, Self.muted)
        let outputs = say(&core, a, payload)
        let error = try #require(sent(outputs, to: a).first)
        #expect(error.messageType == .error)
        #expect(error.payload["code"] == "BAD_REQUEST")
        #expect(error.payload["message"]?.stringValue?.contains(field) == true, "\(error.payload)")
        #expect(sent(outputs, to: b).isEmpty, "nothing relayed")
        #expect(
            core.rooms[rid]?.participants.first?.media == MediaState(audio: false, video: true, screen: false), "the last good state stays")
    }

    @Test func onlyTheThreeBooleansAreKeptAndRelayed() throws {
        let (room, _, a, b) = try twoInARoom()
        var core = room
        let padded: JSONValue = ["audio": true, "video": false, "screen": true, "junk": .string(String(repeating: "x", count: 4_000))]
        let relayed = try #require(sent(say(&core, a, padded), to: b).first)
        #expect(relayed.payload["junk"] == nil)
        #expect(Set(relayed.payload.objectKeys) == ["audio", "video", "screen", "from"])
    }

    @Test func withoutASeatItIsNotInRoom() throws {
        var core = makeCore()
        let a = ConnectionID(1)
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        let error = try #require(sent(say(&core, a, Self.muted), to: a).first)
        #expect(error.payload["code"] == "NOT_IN_ROOM")
    }
}

extension JSONValue {
    fileprivate var objectKeys: [String] {
        if case .object(let fields) = self { return Array(fields.keys) }
        return []
    }
}
