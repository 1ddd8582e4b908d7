import DuetProtocol
import Testing

@testable import DuetClient

/// The engine's side of `media_state`: said after every join and on every change while it can be delivered; the
/// peer's, taken from relays and from `room_state`, kept across a server that does not know it yet.
@Suite struct MediaStateEngineTests {
    let rid = "R" + String(repeating: "a", count: 26)
    static let muted = MediaState(audio: false, video: true, screen: false)

    func joined(cid: String, participants: [ParticipantInfo], epoch: Int64, kind: ReconnectKind = .fresh) throws -> Envelope {
        let payload = JoinedPayload(
            hostCid: "C-h", participants: participants, maxParticipants: 2, reconnect: kind, epoch: epoch,
            reconnectToken: "token-\(cid)", reconnectTokenTTLMs: 1_200_000, turnToken: "turn", turnTokenExpiresAt: 0,
            turnTokenTTLMs: 900_000)
        return Envelope(.joined, rid: rid, cid: cid, epoch: epoch, payload: try JSONValue(encoding: payload))
    }

    func roomState(_ participants: [ParticipantInfo], epoch: Int64) throws -> Envelope {
        Envelope(
            .roomState, rid: rid, epoch: epoch,
            payload: try JSONValue(encoding: RoomStatePayload(hostCid: "C-h", participants: participants, epoch: epoch)))
    }

    func person(_ cid: String, _ media: MediaState? = nil) -> ParticipantInfo {
        ParticipantInfo(cid: cid, joinedAt: 0, connectionStatus: .connected, media: media)
    }

    func mediaStatesSent(_ outputs: [CallEngine.Output]) throws -> [MediaState] {
        try outputs.compactMap { output in
            guard case .send(let envelope) = output, envelope.messageType == .mediaState else { return nil }
            return try envelope.payload.decode(MediaState.self)
        }
    }

    func guestInCall(options: CallEngine.Options = CallEngine.Options()) throws -> (CallEngine, [CallEngine.Output]) {
        var engine = CallEngine(options: options)
        _ = engine.handle(.joinRoom(rid))
        _ = engine.handle(.transportOpened(.ws))
        let out = engine.handle(.message(try joined(cid: "C-g", participants: [person("C-h"), person("C-g")], epoch: 2)))
        return (engine, out)
    }

    @Test func theStateGivenAtTheStartIsSentWithTheJoin() throws {
        var options = CallEngine.Options()
        options.localMedia = Self.muted
        let (_, out) = try guestInCall(options: options)
        #expect(try mediaStatesSent(out) == [Self.muted])
    }

    @Test func aChangeIsSentOnceAndARepeatIsNot() throws {
        var (engine, _) = try guestInCall()
        #expect(try mediaStatesSent(engine.handle(.localMediaChanged(Self.muted))) == [Self.muted])
        #expect(try mediaStatesSent(engine.handle(.localMediaChanged(Self.muted))).isEmpty)
    }

    @Test func aChangeWhileSignalingIsDownGoesOutWithTheRejoinAck() throws {
        var (engine, _) = try guestInCall()
        _ = engine.handle(.transportClosed(.networkError))
        #expect(try mediaStatesSent(engine.handle(.localMediaChanged(Self.muted))).isEmpty, "no transport: nothing to send on")
        _ = engine.handle(.timerFired(.reconnectBackoff))
        let rejoin = engine.handle(.transportOpened(.ws))
        #expect(try mediaStatesSent(rejoin).isEmpty, "before the server has the seat back, it would be NOT_IN_ROOM")
        let back = engine.handle(
            .message(try joined(cid: "C-g", participants: [person("C-h"), person("C-g")], epoch: 4, kind: .recovered)))
        #expect(try mediaStatesSent(back) == [Self.muted], "the latest state, after the join is acknowledged")
    }

    @Test func thePeersStateComesFromRelaysAndRoomState() throws {
        var (engine, out) = try guestInCall()
        #expect(!out.contains(.emit(.remoteMedia(nil))), "nothing known, nothing to say")
        let relayed = try JSONValue(encoding: Self.muted).merging(["from": "C-h"])
        #expect(
            engine.handle(.message(Envelope(.mediaState, rid: rid, cid: "C-g", epoch: 2, payload: relayed))).contains(
                .emit(.remoteMedia(Self.muted))))
        #expect(engine.remoteMedia == Self.muted)
        // Not from the peer (a stale relay of someone else): ignored.
        let stranger = try JSONValue(encoding: MediaState.initial).merging(["from": "C-x"])
        #expect(engine.handle(.message(Envelope(.mediaState, rid: rid, payload: stranger))).isEmpty)
        // A restarted server does not know it yet: what we knew of the same peer stays.
        _ = engine.handle(.message(try roomState([person("C-h"), person("C-g")], epoch: 1)))
        #expect(engine.remoteMedia == Self.muted)
        // The server repeats a newer one.
        let unmuted = engine.handle(.message(try roomState([person("C-h", .initial), person("C-g")], epoch: 2)))
        #expect(unmuted.contains(.emit(.remoteMedia(.initial))))
        // Another peer: what we knew is gone.
        let other = engine.handle(.message(try roomState([person("C-n"), person("C-g")], epoch: 3)))
        #expect(other.contains(.emit(.remoteMedia(nil))))
        #expect(engine.remoteMedia == nil)
    }

    /// Review finding: the state was cleared on leave without telling the app, which kept showing the old peer muted.
    @Test func leavingTellsTheAppThePeersStateIsGone() throws {
        var (engine, _) = try guestInCall()
        _ = engine.handle(.message(try roomState([person("C-h", Self.muted), person("C-g")], epoch: 3)))
        #expect(engine.handle(.leave).contains(.emit(.remoteMedia(nil))))
        #expect(engine.remoteMedia == nil)
    }

    /// Review finding: a new peer was announced with the previous peer's state still in place.
    @Test func aNewPeersStateIsToldBeforeTheNewParticipants() throws {
        var (engine, _) = try guestInCall()
        _ = engine.handle(.message(try roomState([person("C-h", Self.muted), person("C-g")], epoch: 3)))
        let out = engine.handle(.message(try roomState([person("C-n"), person("C-g")], epoch: 4)))
        let reset = try #require(out.firstIndex(of: .emit(.remoteMedia(nil))))
        let participants = try #require(out.firstIndex { if case .emit(.participants) = $0 { true } else { false } })
        #expect(reset < participants)
    }

    @Test func aMalformedStateIsIgnored() throws {
        var (engine, _) = try guestInCall()
        let bad: JSONValue = ["audio": false, "video": "off", "screen": false, "from": "C-h"]
        #expect(engine.handle(.message(Envelope(.mediaState, rid: rid, payload: bad))).isEmpty)
        #expect(engine.remoteMedia == nil)
    }
}

extension JSONValue {
    fileprivate func merging(_ other: JSONValue) -> JSONValue {
        guard case .object(var fields) = self, case .object(let more) = other else { return self }
        fields.merge(more) { _, new in new }
        return .object(fields)
    }
}
