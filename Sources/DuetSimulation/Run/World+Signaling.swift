import DuetClient
import DuetProtocol
import DuetRooms

/// Signaling over the simulated network: TCP-like connections (in order; held through a partition and
/// delivered when it heals; dead for good after a network change), SSE POSTs (each on its own, so they
/// can fail, reorder and repeat), HTTP requests, and the server's keep-alive.
extension World {
    @discardableResult
    func openConnection(_ side: Side, kind: SignalingTransport, generation: Int) -> SimConnection {
        nextConnectionId += 1
        let connection = SimConnection(
            id: nextConnectionId, side: side, kind: kind, clientGeneration: generation, serverIncarnation: server.incarnation,
            pathEpoch: network(side).pathEpoch, now: scheduler.now)
        connections[connection.id] = connection
        guard network(side).signalingUp else {
            trace(side, "open \(kind): no route (times out)")
            return connection
        }
        let there = signalingDelay(side)
        scheduler.after(there) { [self] in
            guard network(side).signalingUp, connection.pathEpoch == network(side).pathEpoch else { return }
            let refusal: SignalingLinkMachine.Failure? =
                !server.isUp ? .error : (kind == .ws && server.webSocketRefusals > 0 ? .unsupported : nil)
            if refusal == nil {
                connection.serverOpen = true
                connection.serverIncarnation = server.incarnation
                connection.lastHeardByServer = scheduler.now
                process(
                    server.core.handle(
                        .opened(ConnectionID(connection.id), kind == .ws ? .ws : .sse, sid: kind == .sse ? client(side).sseSid : nil),
                        nowMs: serverNowMs))
            }
            let back = signalingDelay(side)
            scheduler.after(back) { [self] in
                guard network(side).signalingUp, connection.pathEpoch == network(side).pathEpoch else { return }
                client(side).run {
                    if let refusal {
                        self.client(side).openFailed(kind, refusal, generation: generation)
                    } else {
                        self.client(side).opened(connection)
                    }
                }
            }
        }
        return connection
    }

    /// Client → server.
    func sendUp(_ connection: SimConnection, _ envelope: Envelope) {
        let side = connection.side
        guard connection.clientOpen else { return }
        if connection.pathEpoch != network(side).pathEpoch || connection.upstreamDead {
            return trace(side, "lost in a dead path: \(envelope.type)")
        }
        if envelope.messageType == .join, network(side).joinsToLose > 0 {
            updateNetwork(side) { $0.joinsToLose -= 1 }
            return trace(side, "join lost on its way")
        }
        if connection.kind == .sse {
            postUp(connection, envelope)
            return
        }
        guard network(side).signalingUp else {
            connection.heldUp.append { [self] in sendUp(connection, envelope) }
            return
        }
        var arrival = scheduler.now + signalingDelay(side)
        if network(side).duplicateAndReorder > 0 {
            if rng.chance(0.3) { scheduler.at(arrival + rng.range(0, 400)) { [self] in serverReceives(envelope, on: connection) } }
        } else {
            arrival = max(arrival, connection.lastUpArrival)
            connection.lastUpArrival = arrival
        }
        scheduler.at(arrival) { [self] in serverReceives(envelope, on: connection) }
    }

    /// An SSE POST: its own HTTP request, sent one after another as DuetCall's send loop does (each waits for
    /// the previous response); one that cannot get through fails and takes the link down.
    private func postUp(_ connection: SimConnection, _ envelope: Envelope) {
        connection.postQueue.append(envelope)
        if connection.postQueue.count == 1 { postNext(connection) }
    }

    private func postNext(_ connection: SimConnection) {
        guard let envelope = connection.postQueue.first else { return connection.postsDrained() }
        let side = connection.side
        guard connection.clientOpen else { return }
        guard network(side).signalingUp, connection.pathEpoch == network(side).pathEpoch, !connection.upstreamDead else {
            scheduler.after(ResilienceConstants.HTTP_REQUEST_TIMEOUT_MS) { [self] in
                connection.postQueue.removeAll()
                connection.postsDrained()
                client(side).run { self.client(side).linkFailed(connection) }
            }
            return
        }
        let adversarial = network(side).duplicateAndReorder > 0
        let there = signalingDelay(side)
        scheduler.after(there) { [self] in
            let delivered = server.isUp ? server.core.sseConnection(for: client(side).sseSid) : nil
            var refused = delivered == nil
            if let target = delivered {
                refused = serverReceives(envelope, on: connections[target.raw] ?? connection)
                if adversarial, rng.chance(0.3) {
                    scheduler.after(rng.range(0, 400)) { [self] in serverReceives(envelope, on: connections[target.raw] ?? connection) }
                }
            }
            scheduler.after(signalingDelay(side)) { [self] in
                guard !refused else {
                    connection.postQueue.removeAll()
                    connection.postsDrained()
                    return client(side).run { self.client(side).sidRejected(connection) }
                }
                if !connection.postQueue.isEmpty { connection.postQueue.removeFirst() }
                postNext(connection)
            }
        }
    }

    /// Returns true when the server refused the message as not this sender's (an SSE POST answered 401).
    @discardableResult
    private func serverReceives(_ envelope: Envelope, on connection: SimConnection) -> Bool {
        guard server.isUp, connection.serverIncarnation == server.incarnation, connection.serverOpen else {
            // The process that held this socket is gone (or closed it): the client's TCP gets a reset.
            if connection.kind == .ws, connection.clientOpen { deliverDown(connection, .closed(byServer: false)) }
            return false
        }
        connection.lastHeardByServer = scheduler.now
        let outputs = server.core.handle(.message(ConnectionID(connection.id), envelope), nowMs: serverNowMs)
        // A 401 answers the POST itself, whoever's stream it was routed to.
        let refused = outputs.contains(.unauthorized(ConnectionID(connection.id)))
        process(outputs.filter { $0 != .unauthorized(ConnectionID(connection.id)) })
        return refused
    }

    /// Server → client, in order.
    func deliverDown(_ connection: SimConnection, _ item: SimConnection.DownItem) {
        let side = connection.side
        if connection.pathEpoch != network(side).pathEpoch || connection.downstreamDead { return }
        guard network(side).signalingUp else {
            connection.heldDown.append { [self] in deliverDown(connection, item) }
            return
        }
        let arrival = max(scheduler.now + signalingDelay(side), connection.lastDownArrival)
        connection.lastDownArrival = arrival
        scheduler.at(arrival) { [self] in
            client(side).run {
                connection.lastHeardByClient = self.scheduler.now
                self.client(side).received(item, on: connection)
            }
        }
    }

    /// The client closes its end; the server hears the FIN if it can get there.
    func clientClose(_ connection: SimConnection) {
        guard connection.clientOpen else { return }
        connection.clientOpen = false
        let side = connection.side
        guard connection.pathEpoch == network(side).pathEpoch, !connection.upstreamDead else { return }
        let finish = { [self] in
            // The FIN follows the bytes already on their way.
            let arrival = max(scheduler.now + signalingDelay(side), connection.lastUpArrival)
            connection.lastUpArrival = arrival
            scheduler.at(arrival) { [self] in
                guard connection.serverOpen, connection.serverIncarnation == server.incarnation, server.isUp else { return }
                connection.serverOpen = false
                process(server.core.handle(.closed(ConnectionID(connection.id)), nowMs: serverNowMs))
            }
        }
        if network(side).signalingUp { finish() } else { connection.heldUp.append(finish) }
    }

    func serverClose(_ connection: SimConnection, byServer: Bool, replaced: Bool = false) {
        guard connection.serverOpen else { return }
        connection.serverOpen = false
        process(server.core.handle(.closed(ConnectionID(connection.id)), nowMs: serverNowMs))
        // Close 4001 reaches a WebSocket client as its close code, an SSE client as the stream's `: close 4001` comment.
        deliverDown(connection, replaced ? .replaced : .closed(byServer: byServer))
    }

    /// Performs what the room logic asked for.
    func process(_ outputs: [SignalingCore.Output]) {
        for output in outputs {
            switch output {
            case .send(let id, let envelope):
                guard let connection = connections[id.raw], connection.serverOpen else { continue }
                if envelope.messageType == .offer, firstOfferDelivered[connection.side.rawValue] == nil {
                    firstOfferDelivered[connection.side.rawValue] = envelope
                }
                monitor.serverSends(envelope, to: connection.side)
                deliverDown(connection, .message(envelope))
            case .close(let id, let reason):
                if let connection = connections[id.raw] { serverClose(connection, byServer: true, replaced: reason == .replaced) }
            case .unauthorized(let id):
                if let connection = connections[id.raw] {
                    scheduler.after(signalingDelay(connection.side)) { [self] in
                        client(connection.side).run { self.client(connection.side).linkFailed(connection) }
                    }
                }
            case .event(let event):
                trace(nil, "server: \(event)")
                monitor.serverEvent(event, incarnation: server.incarnation)
            case .persist(let fact):
                server.persist(fact)
            case .push, .broadcast:
                break  // no push service and one server in the simulated world: a ring's live path is what the engines meet
            }
        }
    }

    // MARK: - Keep-alive and silence

    /// The server pings every interval. A WebSocket silent for two intervals is closed (what `duet serve`'s
    /// auto-ping does); an SSE stream is closed by the server's own rule in `SignalingCore` (`SSELiveness`), and
    /// here the world only checks that it was: a stream whose client could not have POSTed for longer than the
    /// rule allows (plus this check's own interval and the core's tick) must be gone.
    func serverKeepAlive() {
        guard server.isUp else { return }
        for connection in connections.values.sorted(by: { $0.id < $1.id })
        where connection.serverOpen && connection.serverIncarnation == server.incarnation {
            let side = connection.side
            let answers =
                connection.clientOpen && connection.pathEpoch == network(side).pathEpoch && !connection.upstreamDead
                && !connection.downstreamDead && network(side).signalingUp && !client(side).frozen
            if answers { connection.lastHeardByServer = scheduler.now }
            let silentFor = scheduler.now - connection.lastHeardByServer
            switch connection.kind {
            case .ws where silentFor >= 2 * ResilienceConstants.PING_INTERVAL_MS:
                serverClose(connection, byServer: false)
            case .ws:
                break
            case .sse:
                if silentFor > SSELiveness.silenceLimitMs + ResilienceConstants.PING_INTERVAL_MS + 2_000, !serverClockJumped,
                    server.core.isOpen(ConnectionID(connection.id))
                {
                    monitor.fail(
                        .vanishedClientKept, side,
                        "the server still holds SSE stream #\(connection.id) \(Describe.time(silentFor)) after its client could last POST")
                }
                deliverDown(connection, .comment)
            }
        }
        connections = connections.filter { $0.value.clientOpen || $0.value.serverOpen }
    }

    /// SSE: a stream silent for `SSE_SILENCE_TIMEOUT_MS` is dead (the server comments every ping interval).
    func watchSilence(_ connection: SimConnection) {
        guard connection.kind == .sse else { return }
        scheduler.after(ResilienceConstants.SSE_SILENCE_TIMEOUT_MS) { [self] in
            guard connection.clientOpen else { return }
            if scheduler.now - connection.lastHeardByClient >= ResilienceConstants.SSE_SILENCE_TIMEOUT_MS {
                client(connection.side).run { self.client(connection.side).linkFailed(connection) }
            } else {
                watchSilence(connection)
            }
        }
    }

    func releaseHeld(_ side: Side) {
        for connection in connections.values.sorted(by: { $0.id < $1.id }) where connection.side == side {
            let up = connection.heldUp
            let down = connection.heldDown
            connection.heldUp = []
            connection.heldDown = []
            up.forEach { $0() }
            down.forEach { $0() }
        }
    }

    // MARK: - HTTP

    /// A request to the server: answered after a round trip when it can get through, refused at once when the
    /// server is down, timed out when the path is dead.
    func http<T>(_ side: Side, timeoutMs: Int64, request: @escaping (World) -> T?, completion: @escaping (T?) -> Void) {
        let reachable = network(side).signalingUp
        if !reachable {
            scheduler.after(timeoutMs) { [self] in client(side).run { completion(nil) } }
            return
        }
        scheduler.after(signalingDelay(side)) { [self] in
            let answer = server.isUp ? request(self) : nil
            scheduler.after(signalingDelay(side)) { [self] in client(side).run { completion(answer) } }
        }
    }

    func createRoomId() -> String? { server.createRoomId() }

    func httpLeave(_ request: LeaveRequest) -> Bool? {
        let (result, outputs) = server.core.httpLeave(request, nowMs: serverNowMs)
        process(outputs)
        return result == .left
    }
}

extension World {
    /// The side's signaling socket works both ways right now.
    func connectionIsLive(_ side: Side) -> Bool {
        guard let connection = client(side).connection else { return false }
        return connection.clientOpen && connection.serverOpen && connection.serverIncarnation == server.incarnation && server.isUp
            && connection.pathEpoch == network(side).pathEpoch && !connection.upstreamDead && !connection.downstreamDead
    }
}
