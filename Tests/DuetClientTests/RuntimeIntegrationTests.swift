import DuetClient
import DuetProtocol
import DuetServer
import DuetTestSupport
import Testing

/// Two `DuetCall` runtimes on the simulated WebRTC pair against the real `duet serve` on an
/// ephemeral port, over real WebSocket and SSE transports.
@Suite struct RuntimeIntegrationTests {
    @Test func callReachesInCallAndConnected() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        // The claims below (WebSocket, one offer, never leaving connected) are the happy path's: they hold while the
        // machine opens a WebSocket within the 2 s connect timeout and delivers the host's offer before the guest's
        // fallback. CI's parallel tests once took longer (the call went to SSE, as designed): the engines' timers run
        // at a quarter of real speed here, so only a machine 4× slower than that trips them.
        let clock = FastClock()
        clock.setRate(0.25)
        let (alice, bob) = try await startCall(server: server, media: media, clock: clock)
        #expect(await alice.call.hostCid == alice.call.cid)
        #expect(await alice.transports().last == .ws)
        #expect(await alice.stats().offersCreated == 1, "the host offers")
        #expect(await bob.stats().offersCreated == 0, "the non-host never needed its fallback offer")
        try await alice.framesKeepFlowing()
        try await bob.framesKeepFlowing()
        #expect(await alice.statuses().isEmpty, "the happy path never leaves connected (seed 001 item 1)")
        try await alice.waitFor("stats events with frames") { participant in
            await participant.events.contains {
                if case .stats(let stats) = $0 { stats.videoFramesReceived > 0 && stats.candidateType == "host" } else { false }
            }
        }
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    /// `leave()` then `shutdown()` at once (what an app does as it closes): the seat is gone on the server, never left
    /// suspended for the partner to wait on. The shutdown used to cancel the queued `leave` when it ran before the
    /// teardown did (RingingRuntimeTests' partner then saw the old seat and never waited alone).
    @Test func leaveThenShutdownLeavesTheSeat() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        for round in 0..<10 {
            let rid = try await server.roomId()
            let call = DuetCall(configuration: .init(server: server.baseURL), engine: await media.makeEngine(name: "leaver-\(round)"))
            await call.join(roomId: rid)
            _ = try await eventually("joined") { await call.cid }
            await call.leave()
            await call.shutdown()
            _ = try await eventually("the seat left, round \(round)") { server.server.hub.occupancy(of: rid) == 0 ? true : nil }
            #expect(server.server.hub.snapshot().suspended == 0, "round \(round): the seat was suspended, not left")
        }
        await media.shutdown()
        await server.stop()
    }

    @Test func killedSocketReattachesWithoutTouchingMedia() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let (alice, bob) = try await startCall(server: server, media: media)
        let cid = await bob.call.cid

        await bob.call.dropSignalingConnection()
        try await bob.waitFor("recovering → connected") { await $0.statuses() == [.recovering, .connected] }
        #expect(await bob.call.cid == cid, "same seat")
        #expect(await bob.stats().peerConnectionsCreated == 1, "media never torn down")
        #expect(await bob.stats().iceRestartsApplied == 0)
        try await bob.framesKeepFlowing()
        try await alice.framesKeepFlowing()
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    /// Issue 32's wedge through the runtime: the host's connection refuses the answer to its ICE restart, so the
    /// runtime replaces it (`renewPeerConnection`) and the call heals on the new one, media flowing both ways. (CI
    /// once reached this path by chance inside RuntimeQualityTests, where the simulated network gave the new connection
    /// the closed one's state and the call never healed.)
    @Test func aConnectionThatRefusesADescriptionIsReplacedAndTheCallHeals() async throws {
        let server = try await TestServer.start()
        var timing = SimulatedMediaNetwork.Timing()
        timing.failAfterCut = .milliseconds(300)
        let media = SimulatedMediaNetwork(timing: timing)
        let (alice, bob) = try await startCall(server: server, media: media)
        await media.refuseRemoteDescriptions(of: alice.engine)
        await media.cut()
        try await alice.waitFor("the refused answer replaced the connection", timeout: .seconds(15)) { participant in
            await participant.events.contains { if case .iceRestart(.peerConnectionWedged) = $0 { true } else { false } }
        }
        await media.restore()
        try await alice.waitInCallConnected(timeout: .seconds(15))
        try await bob.waitInCallConnected(timeout: .seconds(15))
        #expect(await alice.stats().peerConnectionsCreated == 2, "one replacement")
        // Bob's connection answered Alice's old one, so it renews for her new session (docs/call-engine.md, "Wedged
        // connection replaced"): each side on one new connection.
        #expect(await bob.stats().peerConnectionsCreated == 2, "the peer's connection renewed for the new session")
        try await alice.framesKeepFlowing()
        try await bob.framesKeepFlowing()
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test func serverRestartRecoversTheRoom() async throws {
        let original = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let (alice, bob) = try await startCall(server: original, media: media)
        let (aliceCid, bobCid) = (await alice.call.cid, await bob.call.cid)

        let server = try await original.restarted()
        for participant in [alice, bob] {
            try await participant.waitFor("back to connected after the restart") { participant in
                let statuses = await participant.statuses()
                let count = await participant.call.participants.count
                return statuses.count >= 2 && statuses.last == .connected && count == 2
            }
            #expect(await participant.stats().peerConnectionsCreated == 1)
        }
        #expect(await alice.call.cid == aliceCid)
        #expect(await bob.call.cid == bobCid)
        try await alice.framesKeepFlowing()
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test func turnCredentialsAreFetchedAndAppliedToTheLiveConnection() async throws {
        let server = try await TestServer.start {
            $0.turnSecret = "s"
            $0.turnURIs = ["turn:127.0.0.1:3478?transport=udp"]
        }
        let media = SimulatedMediaNetwork()
        let (alice, bob) = try await startCall(server: server, media: media)
        for participant in [alice, bob] {
            try await participant.waitFor("TURN servers applied") { participant in
                let servers = await participant.media.configuration(of: participant.engine).iceServers
                return servers.first?.urls == ["turn:127.0.0.1:3478?transport=udp"] && servers.first?.username?.hasSuffix(":duet") == true
            }
        }
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test func refusedWebSocketFallsBackToSSE() async throws {
        let server = try await TestServer.start { $0.blockWebSocket = true }
        let media = SimulatedMediaNetwork()
        let (alice, bob) = try await startCall(server: server, media: media)
        #expect(await alice.call.transport == .sse)
        #expect(await bob.call.transport == .sse)
        try await bob.framesKeepFlowing()
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }
}

/// Seed 001's verification list, against the real server (time runs 20× faster for the engine).
@Suite struct ConnectionStatusVerificationTests {
    @Test("1 happy path: status stays connected") func happyPath() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let clock = FastClock()
        let (alice, bob) = try await startCall(server: server, media: media, clock: clock)
        clock.setRate(20)
        try await Task.sleep(for: .seconds(1))  // 20 s of engine time: pings, no degradation
        #expect(await alice.statuses().isEmpty)
        #expect(await bob.statuses().isEmpty)
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test("2 recovering: a brief media cut shows recovering, then connected") func briefCut() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let (alice, bob) = try await startCall(server: server, media: media)
        await media.cut()
        try await alice.waitFor("recovering") { await $0.call.connectionStatus == .recovering }
        await media.restore()
        try await alice.waitFor("connected again") { await $0.statuses() == [.recovering, .connected] }
        try await bob.waitFor("connected again") { await $0.call.connectionStatus == .connected }
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test("3 retrying: more than 10 s without recovery → retrying, escalation running") func retrying() async throws {
        let server = try await TestServer.start()
        let (alice, bob, media, clock) = try await startCallThenCutMedia(server: server)
        try await alice.waitFor("retrying") { await $0.call.connectionStatus == .retrying }
        try await alice.waitFor("escalation") { participant in
            await participant.events.contains { if case .escalation = $0 { true } else { false } }
        }
        clock.setRate(2)  // the recovery takes real I/O: no 100 ms connect timeouts (startCallThenCutMedia)
        await media.restore()
        try await alice.waitInCallConnected(timeout: .seconds(15))
        try await bob.waitInCallConnected(timeout: .seconds(15))
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test("4 long outage: 2 min without signaling or media, then everything resumes by itself") func longOutage() async throws {
        let original = try await TestServer.start()
        let (alice, bob, media, clock) = try await startCallThenCutMedia(server: original)
        await original.stop()
        try await alice.waitFor("retrying") { await $0.call.connectionStatus == .retrying }
        try await Task.sleep(for: .seconds(6))  // 2 minutes of engine time
        let server = try await TestServer.start(dataDirectory: original.dataDirectory, port: original.port)
        // The recovery takes real I/O (startCallThenCutMedia). At 2× the escalation's 16 s cap (+20 % jitter) is
        // under 10 s real, inside the 20 s below.
        clock.setRate(2)
        await media.restore()
        try await alice.waitInCallConnected(timeout: .seconds(20))
        try await bob.waitInCallConnected(timeout: .seconds(20))
        #expect(await alice.call.phase == .inCall)
        #expect(await alice.stats().peerConnectionsCreated == 1)
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test("5 leave from retrying: back to idle, nothing left running") func leaveFromRetrying() async throws {
        let server = try await TestServer.start()
        let (alice, bob, media, _) = try await startCallThenCutMedia(server: server)
        try await alice.waitFor("retrying") { await $0.call.connectionStatus == .retrying }
        await alice.call.leave()
        try await alice.waitFor("idle") { await $0.call.phase == .idle }
        let left = await alice.call.scheduledTimers
        #expect(left.isEmpty, "\(left)")
        #expect(await alice.stats().closed)
        try await bob.waitFor("Bob back to waiting") { await $0.call.phase == .waiting }
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test("6 room gone during the outage: the host ended it → on reconnect the call ends by itself") func roomGone() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let (alice, bob) = try await startCall(server: server, media: media)
        // Bob loses signaling and cannot get back for a moment; meanwhile Alice (host) ends the room.
        await bob.call.dropSignalingConnection()
        await alice.call.end()
        try await alice.waitFor("Alice idle") { await $0.call.phase == .idle }
        try await bob.waitFor("Bob idle: the server confirmed the room is gone") { await $0.call.phase == .idle }
        #expect(await bob.call.scheduledTimers.isEmpty)
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }

    @Test("6b the other peer leaves during my outage → Waiting, ready for them to come back") func peerLeftDuringOutage() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let (alice, bob) = try await startCall(server: server, media: media)
        await bob.call.dropSignalingConnection()
        await alice.call.leave()
        try await bob.waitFor("Bob waiting") { await $0.call.phase == .waiting }
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }
}
