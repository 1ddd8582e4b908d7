import DuetProtocol
import DuetRooms
import Foundation
import Logging
import Synchronization

/// Where both transports meet. A transport opens a connection, feeds it raw messages and reports its
/// end; the hub runs them through `SignalingCore` and performs what the core asks for. A room never
/// learns which transport a participant uses.
///
/// A lock, not an actor: handling a message never waits for anything, so the connection's own task runs it
/// in place instead of hopping onto an actor and back for every message (docs/benchmarks.md).
public final class SessionHub: Sendable {
    public enum Verdict: Sendable, Equatable {
        case accepted
        /// The message came from an SSE stream that reused a seated sid without proving it (401).
        case unauthorized
        /// SSE POST for a sid with no open stream (410).
        case unknownSession
        /// SSE POST without the current stream's `X-Duet-Post-Token` (401): nothing was done.
        case wrongPostToken
    }

    private let state: Mutex<SessionState>
    private let logger: Logger

    public init(
        core: SignalingCore, metrics: ServerMetrics, logger: Logger,
        messageRate: (capacity: Double, perSecond: Double)?,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
        store: StoreQueue? = nil,
        pushAlerts: (@Sendable (PushAlert) -> Void)? = nil,
        ringBus: (@Sendable (RingBroadcast) -> Void)? = nil
    ) {
        state = Mutex(SessionState(
            core: core, metrics: metrics, logger: logger, messageRate: messageRate, now: now, store: store, pushAlerts: pushAlerts,
            ringBus: ringBus))
        self.logger = logger
    }

    /// Runs `body` under the lock, then writes what it logged, outside the lock.
    private func locked<Result: Sendable>(_ body: (inout SessionState) -> Result) -> Result {
        let (result, logs) = state.withLock { state in (body(&state), state.takeLogs()) }
        for entry in logs { logger.log(level: entry.level, entry.message, metadata: entry.metadata) }
        return result
    }

    public var isDraining: Bool { locked { $0.isDraining } }

    // MARK: - Transport side

    /// An SSE stream: what the hub queues for it goes to `sink`; POSTs for `sid` are accepted only with `postToken`
    /// (the stream's first message, `sse_session`, gives it to the client).
    func openSSE(sid: String, postToken: String, sink: OutboundSink) -> ConnectionID {
        locked { $0.open(.sse, sid: sid, postToken: postToken, sink: sink) }
    }

    /// A connection whose outbound messages go to `sink` (WebSocket).
    public func open(_ kind: TransportKind, sink: OutboundSink) -> ConnectionID {
        locked { $0.open(kind, sid: nil, postToken: nil, sink: sink) }
    }

    /// One inbound message (a WebSocket text frame or an SSE POST body). Parsed before the lock: parsing is the
    /// largest part of a message's work and needs nothing shared (docs/benchmarks.md: the lock was contended).
    @discardableResult
    public func receive(_ bytes: [UInt8], from id: ConnectionID) -> Verdict {
        let parsed = Self.parse(bytes)
        return locked { $0.receive(parsed, from: id) }
    }

    /// An SSE POST: find the stream by sid; it must carry that stream's POST token.
    public func receive(_ bytes: [UInt8], sid: String, postToken: String?) -> Verdict {
        let (target, refused) = locked { $0.postTarget(sid: sid, postToken: postToken) }
        guard let id = target else { return refused }
        // The stream may end meanwhile: the hub then answers `unknownSession`, as for any closed connection.
        let parsed = Self.parse(bytes)
        return locked { $0.receive(parsed, from: id) }
    }

    private static func parse(_ bytes: [UInt8]) -> Result<Envelope, ProtocolError> {
        do throws(ProtocolError) { return .success(try Envelope.decode(bytes)) } catch { return .failure(error) }
    }

    /// The transport is gone (socket closed, stream ended). The participant, if any, is suspended.
    public func closed(_ id: ConnectionID, reason: String) {
        locked { $0.closed(id, reason: reason) }
    }

    /// A message that was refused before parsing (oversize): tell the sender, then close it.
    public func refuseOversize(_ id: ConnectionID) {
        locked { $0.refuseOversize(id) }
    }

    // MARK: - Server side

    public func tick() { locked { $0.tick() } }

    /// What the store says: at start, another node's write, a dead node's rooms.
    public func learn(_ facts: [DurableFact]) {
        guard !facts.isEmpty else { return }
        locked { $0.learn(facts) }
    }

    public func leave(_ request: LeaveRequest) -> SignalingCore.HTTPLeaveResult {
        locked { $0.leave(request) }
    }

    /// Graceful shutdown, step 1: tell every client to reconnect elsewhere.
    public func drain() { locked { $0.drain() } }

    /// Graceful shutdown, last step.
    public func closeAll() { locked { $0.closeAll() } }

    public func snapshot() -> (rooms: Int, connections: Int, connected: Int, suspended: Int) {
        locked { $0.snapshot() }
    }

    public func occupancy(of rid: String) -> Int { locked { $0.occupancy(of: rid) } }

    public func hasSeat(rid: String, cid: String) -> Bool { locked { $0.hasSeat(rid: rid, cid: cid) } }

    /// See `SignalingCore.provesSeat`.
    public func provesSeat(rid: String, cid: String, token: String) -> Bool { locked { $0.provesSeat(rid: rid, cid: cid, token: token) } }

    /// Whether `token` is the member token of `deviceId` in `rid` (issue 31: it has been in this call).
    public func provesMember(rid: String, deviceId: String, token: String) -> Bool {
        locked { $0.provesMember(rid: rid, deviceId: deviceId, token: token) }
    }

    /// The push dispatcher's report on a ring's pushes.
    public func ringPushed(_ report: SignalingCore.RingPushReport) { locked { $0.ringPushed(report) } }

    /// What another node of the cluster said of a ring.
    public func heard(_ message: RingBroadcast) { locked { $0.heard(message) } }

    /// `POST /api/ring/answer`; false when it does not prove its device.
    public func answerRing(_ answer: RingAnswerPayload) -> Bool { locked { $0.answerRing(answer) } }
}
