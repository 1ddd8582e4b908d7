import DuetClient
import DuetProtocol
import DuetRooms

/// Turning a fault on and off.
extension World {
    func schedule(_ fault: ScheduledFault, from base: Int64) {
        scheduler.at(base + fault.at) { [self] in
            trace(nil, "FAULT \(fault.fault)\(fault.durationMs > 0 ? " for \(fault.durationMs)ms" : "")")
            begin(fault.fault)
            guard fault.durationMs > 0 else { return }
            scheduler.after(fault.durationMs) { [self] in
                trace(nil, "HEAL \(fault.fault)")
                end(fault.fault)
            }
        }
    }

    private func begin(_ fault: Fault) {
        switch fault {
        case .latency(let side, let plane, let ms, let jitter):
            updateNetwork(side) { net in
                if plane.includes(.signaling) {
                    net.signaling.extraLatencyMs += ms
                    net.signaling.jitterMs += jitter
                }
                if plane.includes(.media) {
                    net.media.extraLatencyMs += ms
                    net.media.jitterMs += jitter
                }
            }
        case .loss(let side, let percent):
            updateNetwork(side) { $0.lossPercent += percent }
        case .partition(let side, let plane):
            updateNetwork(side) { net in
                if plane.includes(.signaling) { net.signaling.partitions += 1 }
                if plane.includes(.media) { net.media.partitions += 1 }
            }
        case .halfOpen(let side, let upstreamDead):
            for connection in connections.values where connection.side == side && connection.clientOpen {
                if upstreamDead { connection.upstreamDead = true } else { connection.downstreamDead = true }
            }
        case .dropConnection(let side):
            for connection in connections.values.sorted(by: { $0.id < $1.id }) where connection.side == side && connection.clientOpen {
                // A reset: both ends learn at once.
                if connection.serverOpen, connection.serverIncarnation == server.incarnation {
                    connection.serverOpen = false
                    process(server.core.handle(.closed(ConnectionID(connection.id)), nowMs: serverNowMs))
                }
                client(side).run {
                    connection.clientOpen = false
                    self.client(side).received(.closed(byServer: false), on: connection)
                }
            }
        case .webSocketRefused:
            server.webSocketRefusals += 1
        case .serverCrash:
            crashServer()
        case .serverRestart:
            // One simulated server, as if behind a cluster's proxy: the drain names a successor (`draining {via}`) that
            // the world's single server answers for, so the engines' via rules (kept, sent, forgotten on a failed
            // connect) run in every sweep and in the differential replay.
            process(server.core.handle(.drain(successors: ["node2"]), nowMs: serverNowMs))
            // The drain grace period, then the process exits.
            scheduler.after(1_000) { [self] in crashServer() }
        case .duplicateAndReorder(let side):
            updateNetwork(side) { $0.duplicateAndReorder += 1 }
        case .networkChange(let side, let offline):
            updateNetwork(side) { net in
                net.pathEpoch += 1
                if offline > 0 { net.offline += 1 }
            }
            if offline > 0 {
                client(side).networkOffline()
                scheduler.after(offline) { [self] in
                    trace(nil, "HEAL \(side) online on the new path")
                    updateNetwork(side) { $0.offline -= 1 }
                    client(side).networkOnline()
                }
            } else {
                client(side).networkPathChanged()
            }
        case .freeze(let side):
            client(side).freeze()
            media.evaluate()
        case .serverClockJump(let ms):
            server.clockOffsetMs += ms
            serverClockJumped = true
        case .processRestart(let side):
            restartProcess(side)
        case .loseNextJoin(let side):
            updateNetwork(side) { $0.joinsToLose += 1 }
        case .replayFirstOffer(let side):
            if let offer = firstOfferDelivered[side.rawValue], let connection = client(side).connection {
                trace(side, "replaying the first offer it ever received (epoch \(offer.epoch.map(String.init) ?? "-"))")
                deliverDown(connection, .message(offer))
            }
        case .tamperFingerprints:
            tamperingFingerprints += 1
        case .mediaStall(let side):
            // A webrtcbin guest cannot restart ICE in place: it asks the host (restart_request), which sees nothing wrong.
            media.stallInbound(side)
        case .peerConnectionWedged(let side):
            // webrtcbin refuses nothing this way (it has no rollback, and answers a restart on a fresh session).
            guard !media.webrtcbinSides.contains(side) else { return trace(side, "wedged peer connection not modelled for webrtcbin") }
            media.wedge(side)
        case .silentSender(let side):
            // Firefox's; a webrtcbin side renews its session by itself when its own counters stop, not modelled here.
            guard !media.webrtcbinSides.contains(side) else { return trace(side, "silent sender not modelled for webrtcbin") }
            media.silenceSender(side)
        case .sidHijack(let side):
            // Someone without the room link: their own room, this side's sid.
            attack(side, kind: .sse, join: JoinPayload(device: "attacker"), room: server.createRoomId())
        case .tokenReplay(let side):
            let engine = client(side).engine
            attack(side, kind: .ws, join: JoinPayload(reconnectCid: engine.cid, reconnectToken: engine.reconnectToken, device: "attacker"))
        }
    }

    private func end(_ fault: Fault) {
        switch fault {
        case .latency(let side, let plane, let ms, let jitter):
            updateNetwork(side) { net in
                if plane.includes(.signaling) {
                    net.signaling.extraLatencyMs -= ms
                    net.signaling.jitterMs -= jitter
                }
                if plane.includes(.media) {
                    net.media.extraLatencyMs -= ms
                    net.media.jitterMs -= jitter
                }
            }
        case .loss(let side, let percent):
            updateNetwork(side) { $0.lossPercent -= percent }
        case .partition(let side, let plane):
            updateNetwork(side) { net in
                if plane.includes(.signaling) { net.signaling.partitions -= 1 }
                if plane.includes(.media) { net.media.partitions -= 1 }
            }
        case .halfOpen:
            break  // the half-dead socket stays dead: only a new connection heals
        case .webSocketRefused:
            server.webSocketRefusals -= 1
        case .serverCrash, .serverRestart:
            if !server.isUp { process(server.restart(nowMs: serverNowMs)) }
            trace(
                nil,
                "server up again (incarnation \(server.incarnation), no rooms; the store remembers \(server.ledger.load(nowMs: serverNowMs).count) facts)"
            )
        case .duplicateAndReorder(let side):
            updateNetwork(side) { $0.duplicateAndReorder -= 1 }
        case .freeze(let side):
            media.evaluate()
            client(side).thaw()
            media.evaluate()
        case .tamperFingerprints:
            tamperingFingerprints -= 1
        case .dropConnection, .networkChange, .serverClockJump, .processRestart, .sidHijack, .tokenReplay, .loseNextJoin, .replayFirstOffer,
            .mediaStall, .peerConnectionWedged, .silentSender:
            break
        }
    }

    /// The process dies: the kernel closes its sockets, the peer connection is gone; the relaunched app
    /// joins again a second later with the seat it kept (`CallEvent.session`).
    private func restartProcess(_ side: Side) {
        let old = client(side)
        // What the app stored last: a relaunch that died before joining still has the older seat on disk.
        // After a takeover the app keeps the replaced seat for "use here" (the web client keeps it in session storage).
        relaunch(side, seat: old.seat ?? (old.replacedSeat ?? nil) ?? old.options.resume)
    }

    /// The user of a side whose seat was taken over (close 4001) presses "use here": the page reloads and proves
    /// the seat it kept from `CallEvent.replaced`.
    func useHere(_ side: Side, seat: Seat) {
        trace(side, "the user takes the call back (use here)")
        relaunch(side, seat: seat)
    }

    private func relaunch(_ side: Side, seat: Seat?) {
        let old = client(side)
        old.kill()
        monitor.processRestarted(side)
        media.close(side)
        var options = old.options
        options.resume = seat
        options.jitterSeed = rng.next()
        let relaunched = SimClient(side: side, world: self, options: options, history: old.events)
        replace(side, with: relaunched)
        guard let roomId else { return }
        scheduler.after(1_000) { relaunched.join(roomId) }
    }

    /// A stranger's connection that tries to take a seat, then goes away.
    private func attack(_ side: Side, kind: SignalingTransport, join: JoinPayload, room: String? = nil) {
        guard server.isUp, let roomId = room ?? self.roomId else { return }
        nextConnectionId += 1
        let intruder = SimConnection(
            id: nextConnectionId, side: side, kind: kind, clientGeneration: -1, serverIncarnation: server.incarnation,
            pathEpoch: network(side).pathEpoch, now: scheduler.now)
        intruder.serverOpen = true
        connections[intruder.id] = intruder
        let id = ConnectionID(intruder.id)
        process(
            server.core.handle(.opened(id, kind == .ws ? .ws : .sse, sid: kind == .sse ? client(side).sseSid : nil), nowMs: serverNowMs))
        let envelope = Envelope(.join, rid: roomId, payload: (try? JSONValue(encoding: join)) ?? [:])
        let outputs = server.core.handle(.message(id, envelope), nowMs: serverNowMs)
        for case .send(let target, let reply) in outputs where target == id { trace(nil, "intruder got \(Describe.envelope(reply))") }
        process(outputs.filter { if case .send(let target, _) = $0 { target != id } else { true } })
        scheduler.after(2_000) { [self] in clientClose(intruder) }
    }

    private func crashServer() {
        guard server.isUp else { return }
        server.crash()
        for connection in connections.values.sorted(by: { $0.id < $1.id }) where connection.serverOpen {
            connection.serverOpen = false
            deliverDown(connection, .closed(byServer: false))  // the kernel closes the dead process's sockets
        }
    }
}
