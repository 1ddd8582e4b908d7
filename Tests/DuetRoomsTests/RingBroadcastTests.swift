import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// Rings across the nodes of a cluster (issue 31): the room is held by one node, the callee's page listens on another
/// (its `watch_rooms` connection watches many rooms, so the proxy cannot route it by one). The two cores here pass
/// each other exactly what they broadcast, as PostgreSQL NOTIFY does between nodes.
@Suite struct RingBroadcastTests {
    let helper = RingingTests()

    /// `holder` holds the room with the caller seated; `other` is another node of the same cluster (same secrets).
    func cluster() throws -> (holder: RingingTests.World, other: SignalingCore, tokens: [String: String]) {
        var (holder, tokens) = try helper.world()
        holder.core.settings.remoteListenerGraceMs = RingLimits.clusterUnreachableGraceMs
        var settings = SignalingCore.Settings()
        settings.remoteListenerGraceMs = RingLimits.clusterUnreachableGraceMs
        return (holder, SignalingCore(settings: settings, authorities: helper.authorities, seed: 8), tokens)
    }

    func listen(_ core: inout SignalingCore, _ connection: ConnectionID, rid: String, device: String, token: String, now: Int64)
        -> [SignalingCore.Output]
    {
        _ = core.handle(.opened(connection, .ws, sid: nil), nowMs: now)
        let payload = WatchRoomsPayload(rids: [rid], listen: ListenPayload(deviceId: device, members: [rid: token]))
        return core.handle(.message(connection, Envelope(.watchRooms, payload: try! JSONValue(encoding: payload))), nowMs: now)
    }

    func broadcasts(_ outputs: [SignalingCore.Output]) -> [RingBroadcast] {
        outputs.compactMap { if case .broadcast(let message) = $0 { message } else { nil } }
    }

    /// Everything `outputs` broadcast, heard by `core`; what that produced.
    func deliver(_ outputs: [SignalingCore.Output], to core: inout SignalingCore, now: Int64) -> [SignalingCore.Output] {
        broadcasts(outputs).flatMap { core.handle(.heard($0), nowMs: now) }
    }

    @Test func aPageOnAnotherNodeRingsIsCountedAndItsDeclineReachesTheCaller() throws {
        var (holder, other, tokens) = try cluster()
        let page = ConnectionID(500)
        _ = listen(&other, page, rid: holder.rid, device: helper.calleeDevice, token: tokens[helper.calleeDevice]!, now: 0)
        let started = helper.send(
            &holder, holder.caller, .ring, RingPayload(callId: "call-1", caller: ["sealed": "x"], snapshotId: "SNAP-1"), now: 1_000)
        // The other node rings its page with the holder's incoming_call, and says so.
        let rung = deliver(started, to: &other, now: 1_010)
        let incoming = try #require(helper.messages(rung, to: page, .incomingCall).first).payload.decode(IncomingCallPayload.self)
        #expect(incoming.callId == "call-1" && incoming.caller == ["sealed": "x"] && incoming.snapshotId == "SNAP-1")
        #expect(broadcasts(rung) == [.rang(rid: holder.rid, callId: "call-1", device: helper.calleeDevice)])
        // The holder counts that device: the caller sees "ringing on 1 device", and no push reaching nobody makes it unreachable.
        let counted = deliver(rung, to: &holder.core, now: 1_020)
        let state = try #require(helper.messages(counted, to: holder.caller, .ringState).last).payload.decode(RingStatePayload.self)
        #expect(state.state == "ringing" && state.devices == 1)
        let noPushes = holder.core.handle(.ringPushed(.init(rid: holder.rid, callId: "call-1", reached: [], finished: true)), nowMs: 1_030)
        #expect(helper.callerStates(noPushes, holder) == ["ringing"])
        // The page declines over its own connection: the answer goes to the holder, which ends the ring for everyone.
        let answer = RingAnswerPayload(rid: holder.rid, callId: "call-1", answer: .decline)
        let declined = other.handle(
            .message(page, Envelope(.ringAnswer, rid: holder.rid, payload: try JSONValue(encoding: answer))), nowMs: 2_000)
        #expect(
            broadcasts(declined) == [
                .answered(rid: holder.rid, callId: "call-1", device: helper.calleeDevice, answer: .decline, secret: nil)
            ])
        let ended = deliver(declined, to: &holder.core, now: 2_010)
        #expect(helper.callerStates(ended, holder) == ["declined"])
        #expect(broadcasts(ended) == [.ended(rid: holder.rid, callId: "call-1", reason: "declined")])
        #expect(helper.endReasons(deliver(ended, to: &other, now: 2_020), to: page) == ["declined"])
    }

    @Test func aPageThatComesMidRingOnAnotherNodeRingsAndHearsTheEnd() throws {
        var (holder, other, tokens) = try cluster()
        let started = helper.send(&holder, holder.caller, .ring, RingPayload(callId: "call-2"), now: 1_000)
        #expect(deliver(started, to: &other, now: 1_010).isEmpty, "nobody listens there yet")
        let page = ConnectionID(501)
        let late = listen(&other, page, rid: holder.rid, device: helper.calleeTablet, token: tokens[helper.calleeTablet]!, now: 5_000)
        #expect(helper.messages(late, to: page, .incomingCall).count == 1)
        _ = deliver(late, to: &holder.core, now: 5_010)
        // The caller cancels: the late page stops ringing.
        let cancelled = helper.send(&holder, holder.caller, .ringCancel, RingCancelPayload(callId: "call-2"), now: 6_000)
        #expect(helper.endReasons(deliver(cancelled, to: &other, now: 6_010), to: page) == ["cancelled"])
    }

    @Test func withNobodyAnywhereTheRingIsUnreachableAfterTheGrace() throws {
        var (holder, _, _) = try cluster()
        _ = helper.send(&holder, holder.caller, .ring, RingPayload(callId: "call-3"), now: 1_000)
        let noPushes = holder.core.handle(.ringPushed(.init(rid: holder.rid, callId: "call-3", reached: [], finished: true)), nowMs: 1_050)
        #expect(helper.callerStates(noPushes, holder) == ["ringing"], "another node may yet say it rang a page")
        #expect(helper.callerStates(holder.core.handle(.tick, nowMs: 1_000 + RingLimits.clusterUnreachableGraceMs - 1), holder).isEmpty)
        #expect(
            helper.callerStates(holder.core.handle(.tick, nowMs: 1_000 + RingLimits.clusterUnreachableGraceMs), holder) == ["unreachable"])
    }

    @Test func aLostEndIsForgottenAfterTheRingAndTheCallersDeviceNeverRings() throws {
        var (holder, other, tokens) = try cluster()
        // The caller's own device listening on the other node is not rung.
        let own = ConnectionID(502)
        let caller = helper.callerDevice
        _ = listen(
            &other, own, rid: holder.rid, device: caller,
            token: helper.authorities.memberTokens.issue(rid: holder.rid, deviceId: caller, nowMs: 0), now: 0)
        let started = helper.send(&holder, holder.caller, .ring, RingPayload(callId: "call-4"), now: 1_000)
        let heard = deliver(started, to: &other, now: 1_010)
        #expect(helper.messages(heard, to: own, .incomingCall).isEmpty && broadcasts(heard).isEmpty)
        _ = tokens
        #expect(other.remoteRings[holder.rid] != nil)
        _ = other.handle(.tick, nowMs: 1_000 + RingLimits.ringTimeoutMs + RingLimits.remoteRingGraceMs)
        #expect(other.remoteRings.isEmpty, "an end that never arrived does not keep the ring forever")
    }
}
