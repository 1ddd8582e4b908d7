import Crypto
import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// Ringing in the room logic (issue 31), with time as an argument: the timeout at its edge, and the races a real
/// network makes (accept and cancel at once, two devices answering, the caller's link dropping, a restart).
@Suite struct RingingTests {
    let authorities = SignalingCore.Authorities.forTests()
    let callerDevice = "caller-device-000000"
    let calleeDevice = "callee-device-000001"
    let calleeTablet = "callee-tablet-000002"

    struct World {
        var core: SignalingCore
        let rid: String
        let caller = ConnectionID(1)
        var nextConnection: UInt64 = 10
    }

    /// The callee has been in the call (its member tokens), the caller is seated alone.
    func world() throws -> (World, [String: String]) {
        var core = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: 7)
        let rid = authorities.roomIds.issue()
        var world = World(core: core, rid: rid)
        var tokens: [String: String] = [:]
        for device in [calleeDevice, calleeTablet] {
            let connection = ConnectionID(99)
            _ = core.handle(.opened(connection, .ws, sid: nil), nowMs: 0)
            let joined = try core.joinedForTest(connection, rid: rid, now: 0, payload: JoinPayload(deviceId: device))
            let token: String = try #require(joined.memberToken)
            tokens[device] = token
            _ = core.handle(.message(connection, Envelope(.leave, rid: rid)), nowMs: 0)
            _ = core.handle(.closed(connection), nowMs: 0)
        }
        _ = core.handle(.opened(world.caller, .ws, sid: nil), nowMs: 0)
        _ = try core.joinedForTest(world.caller, rid: rid, now: 0, payload: JoinPayload(deviceId: callerDevice))
        world.core = core
        return (world, tokens)
    }

    /// A page of the callee's that listens for the room's rings.
    func listen(_ world: inout World, device: String, token: String, now: Int64 = 0) -> ConnectionID {
        world.nextConnection += 1
        let connection = ConnectionID(world.nextConnection)
        _ = world.core.handle(.opened(connection, .ws, sid: nil), nowMs: now)
        let payload = WatchRoomsPayload(rids: [world.rid], listen: ListenPayload(deviceId: device, members: [world.rid: token]))
        _ = world.core.handle(.message(connection, Envelope(.watchRooms, payload: try! JSONValue(encoding: payload))), nowMs: now)
        return connection
    }

    func send(_ world: inout World, _ connection: ConnectionID, _ type: MessageType, _ payload: some Encodable, now: Int64)
        -> [SignalingCore.Output]
    {
        world.core.handle(.message(connection, Envelope(type, rid: world.rid, payload: try! JSONValue(encoding: payload))), nowMs: now)
    }

    func messages(_ outputs: [SignalingCore.Output], to connection: ConnectionID, _ type: MessageType) -> [Envelope] {
        outputs.compactMap { if case .send(connection, let envelope) = $0, envelope.messageType == type { envelope } else { nil } }
    }

    func callerStates(_ outputs: [SignalingCore.Output], _ world: World) -> [String] {
        messages(outputs, to: world.caller, .ringState).compactMap { try? $0.payload.decode(RingStatePayload.self).state }
    }

    func endReasons(_ outputs: [SignalingCore.Output], to connection: ConnectionID) -> [String] {
        messages(outputs, to: connection, .ringEnded).compactMap { try? $0.payload.decode(RingEndedPayload.self).reason }
    }

    func pushes(_ outputs: [SignalingCore.Output]) -> [PushAlert] {
        outputs.compactMap { if case .push(let alert) = $0 { alert } else { nil } }
    }

    @Test func aRingReachesListeningDevicesAndEndsAsNoAnswerAtItsTimeout() throws {
        var (world, tokens) = try world()
        let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
        let started = send(&world, world.caller, .ring, RingPayload(callId: "call-1", caller: ["sealed": "x"]), now: 1_000)
        #expect(callerStates(started, world) == ["ringing"])
        let incoming = try #require(messages(started, to: phone, .incomingCall).first).payload.decode(IncomingCallPayload.self)
        #expect(incoming.callId == "call-1" && incoming.caller == ["sealed": "x"] && incoming.expiresAt == 1_000 + RingLimits.ringTimeoutMs)
        // The push goes to every device but the caller's own (a live page may be a hidden tab).
        let push = try #require(pushes(started).first)
        #expect(push.excludedDevices == [callerDevice])
        // 1 ms before the timeout it still rings.
        #expect(callerStates(world.core.handle(.tick, nowMs: 1_000 + RingLimits.ringTimeoutMs - 1), world).isEmpty)
        let ended = world.core.handle(.tick, nowMs: 1_000 + RingLimits.ringTimeoutMs)
        #expect(callerStates(ended, world) == ["no_answer"])
        #expect(endReasons(ended, to: phone) == ["no_answer"])
        #expect(pushes(ended).contains { $0.kind == .ringEnded(callId: "call-1", reason: "no_answer") })
        // Over: a late accept changes nothing.
        #expect(send(&world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "call-1", answer: .accept), now: 50_000).isEmpty)
    }

    @Test func acceptAndCancelAtOnceEndTheRingOnceWhicheverComesFirst() throws {
        for acceptFirst in [true, false] {
            var (world, tokens) = try world()
            let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
            _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
            let accept = { (world: inout World) in
                self.send(&world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .accept), now: 5)
            }
            let cancel = { (world: inout World) in self.send(&world, world.caller, .ringCancel, RingCancelPayload(callId: "c"), now: 5) }
            let first = acceptFirst ? accept(&world) : cancel(&world)
            let second = acceptFirst ? cancel(&world) : accept(&world)
            #expect(callerStates(first, world) == [acceptFirst ? "accepted" : "cancelled"])
            #expect(endReasons(first, to: phone) == [acceptFirst ? "accepted" : "cancelled"])
            #expect(second.filter { if case .send = $0 { true } else { false } }.isEmpty, "the loser of the race changes nothing")
        }
    }

    @Test func twoDevicesAcceptingAtOnceOneWinsTheOtherIsAnsweredElsewhere() throws {
        var (world, tokens) = try world()
        let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
        let tablet = listen(&world, device: calleeTablet, token: tokens[calleeTablet]!)
        let started = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        #expect(try messages(started, to: world.caller, .ringState).first?.payload.decode(RingStatePayload.self).devices == 2)
        let won = send(&world, tablet, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .accept), now: 10)
        let lost = send(&world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .accept), now: 10)
        #expect(callerStates(won, world) == ["accepted"])
        #expect(endReasons(won, to: tablet) == ["accepted"])
        #expect(endReasons(won, to: phone) == ["answered_elsewhere"])
        #expect(lost.isEmpty)
    }

    /// A client answers over signaling and over HTTP (the room's node may be another one in a cluster): whichever
    /// arrives first, the page of that device hears `accepted`, the device's other rung pages "answered elsewhere".
    @Test func anHTTPAcceptFromADeviceThatRangLiveIsThatPagesAccept() throws {
        var (world, tokens) = try world()
        let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
        let tablet = listen(&world, device: calleeTablet, token: tokens[calleeTablet]!)
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        let accepted = world.core.handle(
            .httpRingAnswer(
                RingAnswerPayload(
                    rid: world.rid, callId: "c", answer: .accept, deviceId: calleeTablet, memberToken: tokens[calleeTablet]!)), nowMs: 5)
        #expect(callerStates(accepted, world) == ["accepted"])
        #expect(endReasons(accepted, to: tablet) == ["accepted"])
        #expect(endReasons(accepted, to: phone) == ["answered_elsewhere"])
        #expect(send(&world, tablet, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .accept), now: 6).isEmpty)
    }

    @Test func theRingSurvivesTheCallersSignalingReconnect() throws {
        var (world, tokens) = try world()
        let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
        let joined = try world.core.joinedForTest(world.caller, rid: world.rid, now: 0)  // a re-sent join: its token
        let callerCid = try #require(world.core.connections[world.caller]?.seat?.cid)
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        _ = world.core.handle(.closed(world.caller), nowMs: 2_000)  // the caller's link drops: suspended, still ringing
        let back = ConnectionID(50)
        _ = world.core.handle(.opened(back, .ws, sid: nil), nowMs: 6_000)
        let rejoin = world.core.handle(
            .message(
                back,
                Envelope(
                    .join, rid: world.rid,
                    payload: try JSONValue(
                        encoding: JoinPayload(
                            reconnectCid: callerCid, reconnectToken: joined.reconnectToken)))),
            nowMs: 6_000)
        #expect(messages(rejoin, to: back, .ringState).compactMap { try? $0.payload.decode(RingStatePayload.self).state } == ["ringing"])
        let accepted = send(&world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .accept), now: 7_000)
        #expect(messages(accepted, to: back, .ringState).compactMap { try? $0.payload.decode(RingStatePayload.self).state } == ["accepted"])
    }

    @Test func aRestartForgetsTheRingAndTheCallersResendRingsAgain() throws {
        var (world, tokens) = try world()
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        // A restarted server: same secrets, nothing in memory. The callee's device still rings (its notification)
        // and still proves its membership; the caller recovers its seat and rings again with the same callId.
        var restarted = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: 8)
        let phone = ConnectionID(70)
        _ = restarted.handle(.opened(phone, .ws, sid: nil), nowMs: 9_000)
        _ = restarted.handle(
            .message(
                phone,
                Envelope(
                    .watchRooms,
                    payload: try JSONValue(
                        encoding: WatchRoomsPayload(
                            rids: [world.rid], listen: ListenPayload(deviceId: calleeDevice, members: [world.rid: tokens[calleeDevice]!]))))
            ), nowMs: 9_000)
        let caller = ConnectionID(71)
        _ = restarted.handle(.opened(caller, .ws, sid: nil), nowMs: 9_000)
        _ = try restarted.joinedForTest(caller, rid: world.rid, now: 9_000, payload: JoinPayload(deviceId: callerDevice))
        let again = restarted.handle(
            .message(caller, Envelope(.ring, rid: world.rid, payload: try JSONValue(encoding: RingPayload(callId: "c")))), nowMs: 9_100)
        #expect(messages(again, to: phone, .incomingCall).count == 1)
        // The callee simply joining answers it, however it came (the notification opened the link).
        let callee = ConnectionID(72)
        _ = restarted.handle(.opened(callee, .ws, sid: nil), nowMs: 9_500)
        let arrived = restarted.handle(
            .message(callee, Envelope(.join, rid: world.rid, payload: try JSONValue(encoding: JoinPayload(deviceId: calleeDevice)))),
            nowMs: 9_500)
        #expect(
            messages(arrived, to: caller, .ringState).compactMap { try? $0.payload.decode(RingStatePayload.self).state } == ["accepted"])
        #expect(
            messages(arrived, to: phone, .ringEnded).compactMap { try? $0.payload.decode(RingEndedPayload.self).reason } == [
                "answered_elsewhere"
            ])
    }

    /// A ring with answer commitments counts only answers that show their secret (sealed inside the caller, so only
    /// devices with the link's key have it): a member token alone — a stranger who took an empty seat — is not enough.
    @Test func anAnswerToACommittedRingMustShowItsSecret() throws {
        var (world, tokens) = try world()
        let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
        let accept = [UInt8](repeating: 1, count: 16)
        let decline = [UInt8](repeating: 2, count: 16)
        let commit = { (secret: [UInt8]) in Base64URL.encode(SHA256.hash(data: secret)) }
        let answers = RingAnswerCommitments(accept: commit(accept), decline: commit(decline))
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c", answers: answers), now: 1_000)
        for secret in [nil, Base64URL.encode(accept), Base64URL.encode([UInt8](repeating: 3, count: 16)), "not base64!"] {
            let refused = send(
                &world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .decline, secret: secret), now: 2_000)
            #expect(callerStates(refused, world).isEmpty, "a decline with \(secret ?? "no secret") changes nothing")
            let http = world.core.handle(
                .httpRingAnswer(
                    RingAnswerPayload(
                        rid: world.rid, callId: "c", answer: .decline, deviceId: calleeDevice, memberToken: tokens[calleeDevice]!,
                        secret: secret)), nowMs: 2_000)
            #expect(callerStates(http, world).isEmpty)
        }
        let declined = send(
            &world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .decline, secret: Base64URL.encode(decline)),
            now: 3_000)
        #expect(callerStates(declined, world) == ["declined"])
        // Commitments that are not SHA-256 hashes are refused with the ring.
        let bad = send(
            &world, world.caller, .ring, RingPayload(callId: "d", answers: RingAnswerCommitments(accept: "x", decline: "y")), now: 4_000)
        #expect(messages(bad, to: world.caller, .error).count == 1)
    }

    @Test func onlyProvenDevicesRingAndAnswer() throws {
        var (world, tokens) = try world()
        // A stranger who knows the room id listens with a made-up device and a token of another device.
        let stranger = listen(&world, device: "stranger-device-0001", token: tokens[calleeDevice]!)
        let started = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        #expect(messages(started, to: stranger, .incomingCall).isEmpty)
        let refused = send(&world, stranger, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .decline), now: 1)
        #expect(messages(refused, to: stranger, .error).count == 1)
        #expect(callerStates(refused, world).isEmpty)
        // Over HTTP the member token is the proof.
        #expect(
            world.core.handle(
                .httpRingAnswer(
                    RingAnswerPayload(
                        rid: world.rid, callId: "c", answer: .decline, deviceId: calleeDevice,
                        memberToken: (tokens[calleeDevice]!.first == "0" ? "1" : "0") + tokens[calleeDevice]!.dropFirst())), nowMs: 2
            ).isEmpty)
        let declined = world.core.handle(
            .httpRingAnswer(
                RingAnswerPayload(rid: world.rid, callId: "c", answer: .decline, deviceId: calleeDevice, memberToken: tokens[calleeDevice]!)
            ), nowMs: 2)
        #expect(callerStates(declined, world) == ["declined"])
        // The caller's own device never answers its own ring.
        _ = send(&world, world.caller, .ring, RingPayload(callId: "d"), now: 3)
        let own = listen(
            &world, device: callerDevice,
            token: world.core.authoritiesForTests.memberTokens.issue(rid: world.rid, deviceId: callerDevice, nowMs: 3))
        #expect(
            callerStates(send(&world, own, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "d", answer: .decline), now: 4), world)
                .isEmpty)
    }

    @Test func ringsAreRateLimitedAndNeedASeatAndAShape() throws {
        var (world, _) = try world()
        for index in 0..<RingLimits.perCallerInWindow {
            #expect(callerStates(send(&world, world.caller, .ring, RingPayload(callId: "r\(index)"), now: Int64(index)), world).count == 1)
            _ = send(&world, world.caller, .ringCancel, RingCancelPayload(callId: "r\(index)"), now: Int64(index))
        }
        let limited = send(&world, world.caller, .ring, RingPayload(callId: "over"), now: 10)
        #expect(messages(limited, to: world.caller, .error).first?.payload["code"] == "RATE_LIMITED")
        // After the window it may ring again.
        _ = world.core.handle(.tick, nowMs: RingLimits.windowMs + 10)
        #expect(
            callerStates(send(&world, world.caller, .ring, RingPayload(callId: "later"), now: RingLimits.windowMs + 10), world) == [
                "ringing"
            ])
        _ = send(&world, world.caller, .ringCancel, RingCancelPayload(callId: "later"), now: RingLimits.windowMs + 10)
        // Bad shapes (no ring in progress now: these fail for their shape) and no seat.
        let bad = send(&world, world.caller, .ring, RingPayload(callId: "bad id!"), now: RingLimits.windowMs + 11)
        #expect(messages(bad, to: world.caller, .error).first?.payload["code"] == "BAD_REQUEST")
        let big = send(
            &world, world.caller, .ring, RingPayload(callId: "big", caller: .string(String(repeating: "x", count: 3_000))),
            now: RingLimits.windowMs + 11)
        #expect(messages(big, to: world.caller, .error).count == 1)
        #expect(
            callerStates(send(&world, world.caller, .ring, RingPayload(callId: "fine"), now: RingLimits.windowMs + 12), world) == [
                "ringing"
            ],
            "a good ring right after the bad ones: they were refused for their shape, not the limit")
        let nobody = ConnectionID(90)
        _ = world.core.handle(.opened(nobody, .ws, sid: nil), nowMs: 0)
        #expect(
            messages(send(&world, nobody, .ring, RingPayload(callId: "x"), now: 1), to: nobody, .error).first?.payload["code"]
                == "NOT_IN_ROOM")
    }

    @Test func noDeviceReachedIsUnreachableAndPushesCount() throws {
        var (world, _) = try world()
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        let counted = world.core.handle(.ringPushed(.init(rid: world.rid, callId: "c", reached: ["dev-x"], finished: false)), nowMs: 1)
        #expect(try messages(counted, to: world.caller, .ringState).first?.payload.decode(RingStatePayload.self).devices == 1)
        var (lonely, _) = try self.world()
        _ = send(&lonely, lonely.caller, .ring, RingPayload(callId: "c"), now: 0)
        let unreachable = lonely.core.handle(.ringPushed(.init(rid: lonely.rid, callId: "c", reached: [], finished: true)), nowMs: 1)
        #expect(callerStates(unreachable, lonely) == ["unreachable"])
    }

    @Test func aRoomRingsAtMostFiveTimesInTheWindowWhoeverCalls() throws {
        var (world, _) = try world()
        for index in 0..<RingLimits.perCallerInWindow {
            _ = send(&world, world.caller, .ring, RingPayload(callId: "a\(index)"), now: Int64(index))
            _ = send(&world, world.caller, .ringCancel, RingCancelPayload(callId: "a\(index)"), now: Int64(index))
        }
        _ = world.core.handle(.message(world.caller, Envelope(.leave, rid: world.rid)), nowMs: 10)
        let other = ConnectionID(60)
        _ = world.core.handle(.opened(other, .ws, sid: nil), nowMs: 10)
        _ = try world.core.joinedForTest(other, rid: world.rid, now: 10)
        for index in 0..<(RingLimits.perRoomInWindow - RingLimits.perCallerInWindow) {
            #expect(messages(send(&world, other, .ring, RingPayload(callId: "b\(index)"), now: 11), to: other, .ringState).count == 1)
            _ = send(&world, other, .ringCancel, RingCancelPayload(callId: "b\(index)"), now: 11)
        }
        #expect(
            messages(send(&world, other, .ring, RingPayload(callId: "over"), now: 12), to: other, .error).first?.payload["code"]
                == "RATE_LIMITED")
    }

    @Test func endingTheRoomCancelsItsRing() throws {
        var (world, tokens) = try world()
        let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        let ended = world.core.handle(.message(world.caller, Envelope(.endRoom, rid: world.rid)), nowMs: 5)
        #expect(callerStates(ended, world) == ["cancelled"])
        #expect(endReasons(ended, to: phone) == ["cancelled"])
        #expect(send(&world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .accept), now: 6).isEmpty)
    }

    @Test func aCallerAwayWhenItsRingEndedHearsTheOutcomeWhenItComesBack() throws {
        var (world, tokens) = try world()
        let phone = listen(&world, device: calleeDevice, token: tokens[calleeDevice]!)
        let joined = try world.core.joinedForTest(world.caller, rid: world.rid, now: 0)
        let callerCid = try #require(world.core.connections[world.caller]?.seat?.cid)
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        _ = world.core.handle(.closed(world.caller), nowMs: 1_000)
        let declined = send(&world, phone, .ringAnswer, RingAnswerPayload(rid: world.rid, callId: "c", answer: .decline), now: 2_000)
        #expect(endReasons(declined, to: phone) == ["declined"])
        let back = ConnectionID(51)
        _ = world.core.handle(.opened(back, .ws, sid: nil), nowMs: 3_000)
        let rejoin = world.core.handle(
            .message(
                back,
                Envelope(
                    .join, rid: world.rid,
                    payload: try JSONValue(
                        encoding: JoinPayload(
                            reconnectCid: callerCid, reconnectToken: joined.reconnectToken)))), nowMs: 3_000)
        #expect(messages(rejoin, to: back, .ringState).compactMap { try? $0.payload.decode(RingStatePayload.self).state } == ["declined"])
        // Said once, and forgotten after a while.
        _ = world.core.handle(.closed(back), nowMs: 4_000)
        let again = ConnectionID(52)
        _ = world.core.handle(.opened(again, .ws, sid: nil), nowMs: 5_000)
        let second = world.core.handle(
            .message(
                again,
                Envelope(
                    .join, rid: world.rid,
                    payload: try JSONValue(
                        encoding: JoinPayload(
                            reconnectCid: callerCid, reconnectToken: joined.reconnectToken)))), nowMs: 5_000)
        #expect(messages(second, to: again, .ringState).isEmpty)
    }

    @Test func aPageThatStartsListeningMidRingRings() throws {
        var (world, tokens) = try world()
        _ = send(&world, world.caller, .ring, RingPayload(callId: "c"), now: 0)
        world.nextConnection += 1
        let late = ConnectionID(world.nextConnection)
        _ = world.core.handle(.opened(late, .ws, sid: nil), nowMs: 1_000)
        let payload = WatchRoomsPayload(
            rids: [world.rid], listen: ListenPayload(deviceId: calleeDevice, members: [world.rid: tokens[calleeDevice]!]))
        let watched = world.core.handle(.message(late, Envelope(.watchRooms, payload: try JSONValue(encoding: payload))), nowMs: 1_000)
        #expect(try messages(watched, to: late, .incomingCall).first?.payload.decode(IncomingCallPayload.self).callId == "c")
        let over = world.core.handle(.tick, nowMs: RingLimits.ringTimeoutMs)
        #expect(endReasons(over, to: late) == ["no_answer"])
    }

    /// docs/protocol.md: a room's join alerts are 3 at once, then one more per `joinAlertIntervalMs` (30 s).
    @Test func joinAlertsComeThreeAtOnceThenOnePerThirtySeconds() throws {
        #expect(RingLimits.joinAlertBurst == 3 && RingLimits.joinAlertIntervalMs == 30_000, "as docs/protocol.md says")
        var core = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: 11)
        let rid = authorities.roomIds.issue()
        let host = ConnectionID(1)
        _ = core.handle(.opened(host, .ws, sid: nil), nowMs: 0)
        _ = try core.joinedForTest(host, rid: rid, now: 0, payload: JoinPayload(deviceId: callerDevice))
        var guestNumber: UInt64 = 100
        /// A guest takes a new seat at `now` and leaves: whether a join alert went out.
        func guestJoinAlerts(at now: Int64) -> Bool {
            guestNumber += 1
            let guest = ConnectionID(guestNumber)
            _ = core.handle(.opened(guest, .ws, sid: nil), nowMs: now)
            let joined = core.handle(.message(guest, Envelope(.join, rid: rid)), nowMs: now)
            _ = core.handle(.message(guest, Envelope(.leave, rid: rid)), nowMs: now)
            _ = core.handle(.closed(guest), nowMs: now)
            return pushes(joined).contains { if case .joined = $0.kind { true } else { false } }
        }
        // The host's own join (it made the room) took the first of the burst.
        #expect([1_000, 2_000, 3_000].map(guestJoinAlerts) == [true, true, false], "3 at once, the host's join among them")
        #expect(!guestJoinAlerts(at: 20_000), "the next one refills over 30 s, not at once")
        #expect(guestJoinAlerts(at: 40_000), "one more once 30 s have refilled it")
        #expect(!guestJoinAlerts(at: 41_000), "and only one")
        #expect(
            [200_000, 200_001, 200_002, 200_003].map(guestJoinAlerts) == [true, true, true, false], "a full burst again after a quiet while"
        )
    }

    @Test func aReconnectIsNoNewsAndJoinAlertsAreSpaced() throws {
        var (world, _) = try world()
        let joined = try world.core.joinedForTest(world.caller, rid: world.rid, now: 0)
        let callerCid = try #require(world.core.connections[world.caller]?.seat?.cid)
        _ = world.core.handle(.closed(world.caller), nowMs: 1_000)
        let back = ConnectionID(53)
        _ = world.core.handle(.opened(back, .ws, sid: nil), nowMs: 2_000)
        let reattached = world.core.handle(
            .message(
                back,
                Envelope(
                    .join, rid: world.rid,
                    payload: try JSONValue(
                        encoding: JoinPayload(
                            reconnectCid: callerCid, reconnectToken: joined.reconnectToken)))), nowMs: 2_000)
        #expect(pushes(reattached).isEmpty, "a reconnect is not news")
        // A fresh seat is, with the devices in the room left out (by endpoint and by id).
        let guest = ConnectionID(54)
        _ = world.core.handle(.opened(guest, .ws, sid: nil), nowMs: RingLimits.joinAlertIntervalMs)
        let arrived = world.core.handle(
            .message(
                guest,
                Envelope(
                    .join, rid: world.rid,
                    payload: try JSONValue(
                        encoding: JoinPayload(
                            pushEndpoint: "https://push.example/guest", deviceId: calleeDevice)))), nowMs: RingLimits.joinAlertIntervalMs)
        let alert = try #require(pushes(arrived).first)
        #expect(alert.excludedEndpoints == ["https://push.example/guest"])
        #expect(alert.excludedDevices.sorted() == [calleeDevice, callerDevice].sorted())
        // A join/leave loop is not a stream of notifications: the budget (3 at once, then one per interval) runs out.
        var alerts = 0
        for step in 0..<6 {
            let at = RingLimits.joinAlertIntervalMs + 1 + Int64(step) * 2
            _ = world.core.handle(.message(guest, Envelope(.leave, rid: world.rid)), nowMs: at)
            alerts += pushes(world.core.handle(.message(guest, Envelope(.join, rid: world.rid)), nowMs: at + 1)).count
        }
        #expect(alerts < 3, "the setup's joins and this loop share the room's budget: \(alerts)")
        _ = world.core.handle(.message(guest, Envelope(.leave, rid: world.rid)), nowMs: 10 * RingLimits.joinAlertIntervalMs)
        #expect(
            pushes(world.core.handle(.message(guest, Envelope(.join, rid: world.rid)), nowMs: 10 * RingLimits.joinAlertIntervalMs)).count
                == 1,
            "refilled after a while")
    }
}
