import DuetProtocol
import DuetTransport
import Foundation
import Synchronization

/// One load-generating client: a real WebSocket (DuetTransport's, as the apps use), the Duet envelope, and a
/// receive loop that records relay latency from the send time carried in each payload (`t`, monotonic ns).
final class BenchClient: Sendable {
    let connection: WebSocketSignalingConnection
    let latency: LatencyRecorder
    private let state = Mutex(State())

    private struct State {
        var received = 0
        var joinWaiter: CheckedContinuation<Envelope, Never>?
        var joinedUnclaimed: [Envelope] = []
        var onRelay: (@Sendable (Envelope) -> Void)?
        var closed = false
        var onClose: (@Sendable () -> Void)?
    }

    static func connect(_ url: String, latency: LatencyRecorder) async throws -> BenchClient {
        let connection = try await WebSocketSignalingConnection.connect(url: url, timeout: .seconds(10))
        let client = BenchClient(connection: connection, latency: latency)
        Task { await client.receive() }
        return client
    }

    private init(connection: WebSocketSignalingConnection, latency: LatencyRecorder) {
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
                let (waiter, handler) = state.withLock { state -> (CheckedContinuation<Envelope, Never>?, (@Sendable (Envelope) -> Void)?) in
                    state.received += 1
                    guard envelope.type == "joined" else { return (nil, state.onRelay) }
                    if let waiter = state.joinWaiter {
                        state.joinWaiter = nil
                        return (waiter, nil)
                    }
                    state.joinedUnclaimed.append(envelope)
                    return (nil, nil)
                }
                waiter?.resume(returning: envelope)
                handler?(envelope)
            case .undecodable: break
            case .closed:
                let handler = state.withLock { state in
                    state.closed = true
                    return state.onClose
                }
                handler?()
                return
            }
        }
    }

    /// Sends `join` and waits for `joined`; returns it and the time it took.
    func join(_ rid: String, reconnect: (cid: String, token: String)? = nil) async throws -> (Envelope, Duration) {
        let payload = JoinPayload(reconnectCid: reconnect?.cid, reconnectToken: reconnect?.token, device: "bench")
        let started = ContinuousClock.now
        try await connection.send(Envelope(.join, rid: rid, payload: try JSONValue(encoding: payload)))
        let envelope = await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Envelope? in
                if !state.joinedUnclaimed.isEmpty { return state.joinedUnclaimed.removeFirst() }
                state.joinWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
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
        "candidate": ["candidate": "candidate:1 1 udp 2122260223 10.0.0.1 50000 typ host generation 0", "sdpMid": "0", "sdpMLineIndex": 0],
    ]
}
