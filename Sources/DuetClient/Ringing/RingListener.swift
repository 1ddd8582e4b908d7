import AsyncHTTPClient
import DuetProtocol
import DuetTransport
import Foundation
import Logging
import NIOCore

/// The callee's side of ringing for an app (issue 31): listens for the rings of the calls this device has been in
/// (`watch_rooms` with its member tokens), reports each as an `IncomingCall`, answers, and reports how each ended.
/// It reconnects by itself (doubling backoff, WebSocket then SSE, as calls do) and says its rooms again, so a ring is
/// never lost to a dropped socket while the app runs; when it does not run, the ring comes by push.
///
/// ```swift
/// let listener = RingListener(server: url, deviceId: id, calls: [.init(roomId: rid, memberToken: token, key: key)])
/// Task { for await event in listener.events { … } }   // CallKit: reportNewIncomingCall / reportCall(endedAt:reason:)
/// await listener.start()
/// await listener.accept(call)                           // then join the call: DuetCall(…).join(roomId: call.roomId)
/// ```
public actor RingListener {
    public struct SavedCall: Sendable, Equatable {
        public var roomId: String
        /// From this device's `joined` in that call (`DuetCall.memberToken`).
        public var memberToken: String
        /// The link's key: the caller's name opens only with it.
        public var key: LinkKey?
        public init(roomId: String, memberToken: String, key: LinkKey?) {
            self.roomId = roomId
            self.memberToken = memberToken
            self.key = key
        }
    }

    public enum Event: Sendable, Equatable {
        /// Listening (again) after a connect, as the server confirmed it (`room_statuses`): rings reach this device.
        case listening
        case incoming(IncomingCall)
        case ended(IncomingCall, IncomingCall.EndReason)
    }

    public nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let server: String
    private let deviceId: String
    private var calls: [SavedCall]
    private let transports: [SignalingTransportKind]
    private var connection: (any SignalingConnection)?
    private var ringing: [String: IncomingCall] = [:]
    private var runner: Task<Void, Never>?
    private let logger = Logger(label: "duet.ring-listener")

    /// `transports`: tried in this order, the next after two failures of one.
    public init(server: String, deviceId: String, calls: [SavedCall], transports: [SignalingTransportKind] = [.ws, .sse]) {
        self.server = server.hasSuffix("/") ? server : server + "/"
        self.deviceId = deviceId
        self.calls = calls
        self.transports = transports
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    public func start() {
        guard runner == nil else { return }
        runner = Task { await self.run() }
    }

    public func stop() async {
        runner?.cancel()
        runner = nil
        await connection?.close()
        connection = nil
        continuation.finish()
    }

    /// The calls to listen for changed (a call saved or forgotten, a new member token).
    public func update(calls: [SavedCall]) async {
        self.calls = calls
        try? await sendWatch()
    }

    public func accept(_ call: IncomingCall) async { await answer(call, .accept) }
    public func decline(_ call: IncomingCall) async { await answer(call, .decline) }

    private func answer(_ call: IncomingCall, _ answer: RingAnswerPayload.Answer) async {
        let payload = RingAnswerPayload(rid: call.roomId, callId: call.callId, answer: answer, secret: call.answers?.secret(for: answer))
        if let envelope = try? Envelope(.ringAnswer, rid: call.roomId, payload: JSONValue(encoding: payload)) {
            try? await connection?.send(envelope)
        }
        // Over HTTP too, with ?rid=: a notification's button must not depend on the socket, and in a cluster this
        // listener's connection may be on another node than the room (a proxy routes the POST by rid). A second
        // answer changes nothing.
        if let saved = calls.first(where: { $0.roomId == call.roomId }) {
            await answerOverHTTP(call, answer, memberToken: saved.memberToken)
        }
    }

    private func answerOverHTTP(_ call: IncomingCall, _ answer: RingAnswerPayload.Answer, memberToken: String) async {
        let payload = RingAnswerPayload(
            rid: call.roomId, callId: call.callId, answer: answer, deviceId: deviceId, memberToken: memberToken,
            secret: call.answers?.secret(for: answer))
        var post = HTTPClientRequest(url: server + "api/ring/answer?rid=" + SignalingURL.queryComponent(call.roomId))
        post.method = .POST
        post.headers.add(name: "Content-Type", value: "application/json")
        post.body = .bytes(ByteBuffer(bytes: (try? JSONEncoder().encode(payload)) ?? Data()))
        _ = try? await HTTPClient.shared.execute(post, timeout: .milliseconds(ResilienceConstants.HTTP_REQUEST_TIMEOUT_MS))
    }

    private func run() async {
        var attempt = 0
        while !Task.isCancelled {
            let kind = transports[min(attempt / 2, transports.count - 1) % transports.count]
            do {
                let opened: any SignalingConnection =
                    switch kind {
                    case .ws:
                        try await WebSocketSignalingConnection.connect(url: SignalingURL.webSocket(server: server), timeout: .seconds(2))
                    case .sse:
                        try await SSESignalingConnection.connect(baseURL: server, sid: SessionIdFormat.random(), timeout: .seconds(2))
                    }
                connection = opened
                try await sendWatch()
                attempt = 0
                for await event in opened.events {
                    guard case .message(let envelope) = event else { continue }
                    // The server answers watch_rooms with room_statuses once it has taken the rooms: only then is
                    // this device rung (a ring sent before it would find nobody listening).
                    if envelope.messageType == .roomStatuses { continuation.yield(.listening) }
                    receive(envelope)
                }
                connection = nil
            } catch {
                logger.debug("ring listener could not connect", metadata: ["error": "\(error)"])
                connection = nil
            }
            attempt += 1
            let delay = min(ResilienceConstants.RECONNECT_BACKOFF_BASE_MS << min(attempt, 10), ResilienceConstants.RECONNECT_BACKOFF_CAP_MS)
            try? await Task.sleep(for: .milliseconds(delay))
        }
    }

    private func sendWatch() async throws {
        guard let connection else { return }
        let listen = ListenPayload(
            deviceId: deviceId, members: Dictionary(calls.map { ($0.roomId, $0.memberToken) }, uniquingKeysWith: { a, _ in a }))
        try await connection.send(
            Envelope(.watchRooms, payload: JSONValue(encoding: WatchRoomsPayload(rids: calls.map(\.roomId), listen: listen))))
    }

    private func expire(_ callId: String) {
        guard let call = ringing.removeValue(forKey: callId) else { return }
        continuation.yield(.ended(call, .missed))
    }

    private func receive(_ envelope: Envelope) {
        switch envelope.messageType {
        case .incomingCall?:
            guard let ring = try? envelope.payload.decode(IncomingCallPayload.self), ringing[ring.callId] == nil else { return }
            let key = calls.first { $0.roomId == ring.rid }?.key
            let opened = CallerSeal.opened(ring.caller, rid: ring.rid, callId: ring.callId, key: key)
            let call = IncomingCall(
                roomId: ring.rid, callId: ring.callId, caller: opened.caller, expiresAt: ring.expiresAt, answers: opened.answers)
            ringing[ring.callId] = call
            continuation.yield(.incoming(call))
            // The ring ends by itself at its time even if the server's word never comes (a lost link): missed.
            let wait = max(0, min(ring.expiresAt - CallerSeal.nowMs(), 120_000)) + 2_000
            Task { [weak self] in
                try? await Task.sleep(for: .milliseconds(wait))
                await self?.expire(ring.callId)
            }
        case .ringEnded?:
            guard let ended = try? envelope.payload.decode(RingEndedPayload.self), let call = ringing.removeValue(forKey: ended.callId)
            else { return }
            continuation.yield(.ended(call, IncomingCall.EndReason(rawValue: ended.reason) ?? .missed))
        default:
            break
        }
    }
}
