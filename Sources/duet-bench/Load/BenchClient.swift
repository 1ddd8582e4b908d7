import AsyncHTTPClient
import DuetLock
import DuetProtocol
import DuetTransport
import Foundation

/// One load-generating client: a real WebSocket or SSE connection (DuetTransport's, as the apps use), the Duet
/// envelope, and a receive loop that records relay latency from the send time carried in each payload (`t`, monotonic ns).
final class BenchClient: Sendable {
    let connection: any SignalingConnection
    let latency: LatencyRecorder
    private let state = Mutex(State())

    private struct State {
        var received = 0
        var joinWaiter: CheckedContinuation<Envelope?, Never>?
        var joinedUnclaimed: [Envelope] = []
        var onRelay: (@Sendable (Envelope) -> Void)?
        var closed = false
        var onClose: (@Sendable () -> Void)?
        /// A sender waiting for its window to open: resumed once `received` reaches the target (or on release).
        var windowWaiter: (target: Int, continuation: CheckedContinuation<Void, Never>)?
        var released = false
    }

    static func connect(_ url: String, latency: LatencyRecorder) async throws -> BenchClient {
        start(try await WebSocketSignalingConnection.connect(url: url, timeout: .seconds(10)), latency: latency)
    }

    static func connect(to server: ServerUnderTest, over transport: SignalingTransportKind, latency: LatencyRecorder) async throws
        -> BenchClient
    {
        switch transport {
        case .ws: try await connect(server.webSocketURL, latency: latency)
        case .sse:
            start(try await SSESignalingConnection.connect(baseURL: server.baseURL, timeout: .seconds(10), http: sseHTTP), latency: latency)
        }
    }

    /// SSE holds one HTTP connection per stream and POSTs beside it: the shared client's pool (8 per host)
    /// would queue every stream past the eighth.
    static let sseHTTP = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: .init(connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 8_192)))

    static func start(_ connection: any SignalingConnection, latency: LatencyRecorder) -> BenchClient {
        let client = BenchClient(connection: connection, latency: latency)
        Task { await client.receive() }
        return client
    }

    private init(connection: any SignalingConnection, latency: LatencyRecorder) {
        self.connection = connection
        self.latency = latency
    }

    var received: Int { state.withLock { $0.received } }
    var isClosed: Bool { state.withLock { $0.closed } }

    func onRelay(_ handler: @escaping @Sendable (Envelope) -> Void) { state.withLock { $0.onRelay = handler } }
    func onClose(_ handler: @escaping @Sendable () -> Void) { state.withLock { $0.onClose = handler } }

    private func receive() async {
        for await event in connection.events {
            switch event {
            case .message(let envelope):
                if case .int(let sent)? = envelope.payload["t"] {
                    latency.record(nanoseconds: Self.now &- UInt64(truncatingIfNeeded: sent))
                }
                let (waiter, handler, window) = state.withLock {
                    state -> (CheckedContinuation<Envelope?, Never>?, (@Sendable (Envelope) -> Void)?, CheckedContinuation<Void, Never>?) in
                    state.received += 1
                    var window: CheckedContinuation<Void, Never>?
                    if let waiter = state.windowWaiter, state.received >= waiter.target {
                        window = waiter.continuation
                        state.windowWaiter = nil
                    }
                    // An `error` answers a join that waits (a refused join); otherwise it is not a join's answer.
                    if envelope.type == "error", let waiter = state.joinWaiter {
                        state.joinWaiter = nil
                        return (waiter, nil, window)
                    }
                    guard envelope.type == "joined" else { return (nil, state.onRelay, window) }
                    if let waiter = state.joinWaiter {
                        state.joinWaiter = nil
                        return (waiter, nil, window)
                    }
                    state.joinedUnclaimed.append(envelope)
                    return (nil, nil, window)
                }
                window?.resume()
                waiter?.resume(returning: envelope)
                handler?(envelope)
            case .undecodable: break
            case .closed:
                let (handler, window, join) = state.withLock { state in
                    state.closed = true
                    defer {
                        state.windowWaiter = nil
                        state.joinWaiter = nil
                    }
                    return (state.onClose, state.windowWaiter?.continuation, state.joinWaiter)
                }
                window?.resume()
                join?.resume(returning: nil)
                handler?()
                return
            }
        }
    }

    /// Suspends until this client has received `count` messages in all, without polling (a sender's window),
    /// or until `releaseWaiters` (the run's deadline) or the socket closes.
    func waitForReceived(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.received >= count || state.closed || state.released { return true }
                state.windowWaiter = (count, continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func releaseWaiters() {
        let window = state.withLock { state in
            state.released = true
            defer { state.windowWaiter = nil }
            return state.windowWaiter?.continuation
        }
        window?.resume()
    }

    /// Sends `join` and waits for its answer, `joined` or an `error` (a refused join); returns it and the time it
    /// took. Throws when the connection closes first or no answer comes within `timeout`.
    func join(_ rid: String, reconnect: (cid: String, token: String)? = nil, timeout: Duration = .seconds(60)) async throws -> (
        Envelope, Duration
    ) {
        let payload = JoinPayload(reconnectCid: reconnect?.cid, reconnectToken: reconnect?.token, device: "bench")
        let started = ContinuousClock.now
        try await connection.send(Envelope(.join, rid: rid, payload: try JSONValue(encoding: payload)))
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            let waiter = self?.state.withLock { state in
                defer { state.joinWaiter = nil }
                return state.joinWaiter
            }
            waiter?.resume(returning: nil)
        }
        defer { timer.cancel() }
        let envelope = await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Envelope?? in
                if !state.joinedUnclaimed.isEmpty { return .some(state.joinedUnclaimed.removeFirst()) }
                if state.closed { return .some(nil) }
                state.joinWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        guard let envelope else { throw BenchError("join: no answer within \(timeout) (or the connection closed)") }
        return (envelope, ContinuousClock.now - started)
    }

    func send(_ type: MessageType, rid: String?, payload: JSONValue) async throws {
        var stamped = payload
        stamped["t"] = .int(Int64(bitPattern: Self.now))
        try await connection.send(Envelope(type, rid: rid, payload: stamped))
    }

    func close() async { await connection.close() }

    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    static let candidate: JSONValue = [
        "candidate": ["candidate": "candidate:1 1 udp 2122260223 10.0.0.1 50000 typ host generation 0", "sdpMid": "0", "sdpMLineIndex": 0]
    ]
}
