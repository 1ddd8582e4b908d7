import Crypto
import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// What the room logic remembers stays bounded, its counters agree with its rooms, and a connection cut off for not
/// reading is a lost transport whose undelivered relay is answered.
@Suite struct BoundedRoomStateTests {
    let authorities = SignalingCore.Authorities.forTests()

    @Test func expiringKeysForgetTheOldestFirstAndWhatExpired() {
        var keys = ExpiringKeys(capacity: 3)
        for index in 0..<5 { keys.insert("k\(index)", until: 1_000 + Int64(index), nowMs: 0) }
        #expect(keys.count == 3)
        #expect(!keys.contains("k0", nowMs: 0) && !keys.contains("k1", nowMs: 0))
        #expect(keys.contains("k2", nowMs: 0) && keys.contains("k4", nowMs: 0))
        // A live key keeps its first expiry; inserting it again (a leave posted again and again) adds nothing.
        for _ in 0..<10_000 { keys.insert("k2", until: 5_000, nowMs: 10) }
        #expect(keys.orderLength <= 5)
        keys.prune(nowMs: 1_003)
        #expect(!keys.contains("k2", nowMs: 1_003) && !keys.contains("k3", nowMs: 1_003))
        #expect(keys.count == 1)
        // Once expired, the same key can be remembered anew.
        keys.insert("k2", until: 9_000, nowMs: 2_000)
        #expect(keys.contains("k2", nowMs: 8_999))
        keys.prune(nowMs: 9_000)
        #expect(keys.count == 0)
        // A long loop stays bounded.
        var loop = ExpiringKeys(capacity: 100)
        for index in 0..<50_000 { loop.insert("seat-\(index)", until: Int64(index) + 1_000_000, nowMs: 0) }
        #expect(loop.count == 100)
        #expect(loop.contains("seat-49999", nowMs: 0))
    }

    /// An unauthenticated join/leave loop: every leave revokes a seat, and the core remembers at most the bound.
    @Test func aJoinLeaveLoopDoesNotGrowTheRevocations() throws {
        var settings = SignalingCore.Settings()
        settings.maxRememberedSeats = 50
        var core = SignalingCore(settings: settings, authorities: authorities, seed: 7)
        let connection = ConnectionID(1)
        _ = core.handle(.opened(connection, .ws, sid: nil), nowMs: 0)
        for index in 0..<1_000 {
            let rid = authorities.roomIds.issue()
            _ = core.handle(
                .message(connection, Envelope(.join, rid: rid, payload: ["capabilities": ["trickleIce": true]])), nowMs: Int64(index))
            _ = core.handle(.message(connection, Envelope(.leave, rid: rid)), nowMs: Int64(index))
        }
        #expect(core.rememberedSeats.revoked == 50)
        #expect(core.roomCount == 0)
    }

    /// The counters `/metrics` reads are kept as seats change; after every step of a random run they equal a walk of
    /// every room.
    @Test(arguments: 1...20)
    func seatCountersAgreeWithTheRooms(seed: UInt64) throws {
        var core = SignalingCore(settings: .init(), authorities: authorities, seed: seed)
        var random = SplitMix64(seed: seed)  // replayable from its seed
        let rids = (0..<3).map { _ in authorities.roomIds.issue() }
        var tokens: [ConnectionID: (rid: String, cid: String, token: String)] = [:]
        var lastTokens: [(rid: String, cid: String, token: String)] = []
        var next: UInt64 = 1
        var now: Int64 = 0
        for _ in 0..<400 {
            now += Int64(random.next() % 5_000)
            let connection = ConnectionID(UInt64(random.next() % next) + 1)
            var outputs: [SignalingCore.Output] = []
            switch random.next() % 8 {
            case 0, 1:
                let fresh = ConnectionID(next)
                next += 1
                outputs = core.handle(.opened(fresh, .ws, sid: nil), nowMs: now)
                var payload: JSONValue = ["capabilities": ["trickleIce": true]]
                var rid = rids[Int(random.next() % 3)]
                if random.next() % 2 == 0, let old = lastTokens.randomElement(using: &random) {
                    payload["reconnectCid"] = .string(old.cid)
                    payload["reconnectToken"] = .string(old.token)
                    rid = old.rid
                }
                outputs += core.handle(.message(fresh, Envelope(.join, rid: rid, payload: payload)), nowMs: now)
            case 2: outputs = core.handle(.closed(connection), nowMs: now)
            case 3: outputs = core.handle(.message(connection, Envelope(.leave)), nowMs: now)
            case 4: outputs = core.handle(.message(connection, Envelope(.endRoom)), nowMs: now)
            case 5: outputs = core.handle(.undeliverable(connection, Envelope(.offer, payload: ["sdp": "x"])), nowMs: now)
            default: outputs = core.handle(.tick, nowMs: now + Int64(random.next() % 700_000))
            }
            for case .send(let target, let envelope) in outputs where envelope.messageType == .joined {
                if let joined = try? envelope.payload.decode(JoinedPayload.self), let rid = envelope.rid, let cid = envelope.cid {
                    tokens[target] = (rid, cid, joined.reconnectToken)
                    lastTokens.append((rid, cid, joined.reconnectToken))
                }
            }
            #expect(core.participantCount(.connected) == core.participantCountByWalk(.connected))
            #expect(core.participantCount(.suspended) == core.participantCountByWalk(.suspended))
        }
    }

    /// The transport refused a relay for a reader that stopped reading: the reader's seat is suspended, the peer hears
    /// it in `room_state`, and the relay's sender gets `relay_failed target_suspended`.
    @Test func anUndeliverableRelaySuspendsTheReaderAndAnswersTheSender() throws {
        var core = SignalingCore(settings: .init(), authorities: authorities, seed: 3)
        let rid = authorities.roomIds.issue()
        let reader = ConnectionID(1)
        let sender = ConnectionID(2)
        for connection in [reader, sender] {
            _ = core.handle(.opened(connection, .ws, sid: nil), nowMs: 0)
            _ = core.handle(.message(connection, Envelope(.join, rid: rid, payload: ["capabilities": ["trickleIce": true]])), nowMs: 0)
        }
        let relayed = core.handle(.message(sender, Envelope(.offer, rid: rid, payload: ["sdp": "v=0"])), nowMs: 1)
        guard case .send(reader, let offer)? = relayed.first else { throw TestFailure("offer not relayed: \(relayed)") }
        let outputs = core.handle(.undeliverable(reader, offer), nowMs: 2)
        #expect(!core.isOpen(reader))
        #expect(core.participantCount(.suspended) == 1)
        let failed = outputs.compactMap { output -> RelayFailedPayload? in
            guard case .send(sender, let envelope) = output, envelope.messageType == .relayFailed else { return nil }
            return try? envelope.payload.decode(RelayFailedPayload.self)
        }
        #expect(failed.count == 1)
        #expect(failed.first?.reason == .targetSuspended)
        #expect(failed.first?.of == "offer")
        #expect(outputs.contains { if case .send(sender, let envelope) = $0 { envelope.messageType == .roomState } else { false } })
        // Not a relay (a room_state for the reader): the seat is suspended, nobody is answered.
        let other = core.handle(.undeliverable(sender, Envelope(.roomState)), nowMs: 3)
        #expect(!other.contains { if case .send(_, let envelope) = $0 { envelope.messageType == .relayFailed } else { false } })
    }

    /// Server cids come from the system CSPRNG; only the simulator's cores are seeded.
    @Test func serverCidsAreNotASeededSequence() throws {
        func cids(_ ids: SignalingCore.IdRandomness) -> [String] {
            var core = SignalingCore(settings: .init(), authorities: authorities, ids: ids)
            return (0..<4).map { _ in core.makeCid(in: "r") }
        }
        #expect(cids(.seeded(9)) == cids(.seeded(9)))
        #expect(cids(.system) != cids(.system))
    }
}
