import DuetProtocol
import DuetTestSupport
import DuetTransport
import Foundation

/// A protocol-level client on a real transport, with an inbox the test reads from.
final class TestClient: Sendable {
    let connection: any SignalingConnection
    private let inbox = Inbox()
    private let reader: Task<Void, Never>

    /// `roomId`: named in the connection's URL (`?rid=`), as DuetCall and the browser client do for a call.
    static func connect(
        _ kind: SignalingTransportKind, to server: TestServer, sid: String = SessionIdFormat.random(), roomId: String? = nil
    ) async throws -> TestClient {
        try await connect(kind, baseURL: server.baseURL, sid: sid, roomId: roomId)
    }

    /// Any server by its base URL (a `duet serve` process, a node of a cluster).
    static func connect(
        _ kind: SignalingTransportKind, baseURL: String, sid: String = SessionIdFormat.random(), roomId: String? = nil
    ) async throws -> TestClient {
        switch kind {
        case .ws:
            let url = SignalingURL.webSocket(server: baseURL, roomId: roomId)
            return TestClient(try await WebSocketSignalingConnection.connect(url: url, timeout: .seconds(5)))
        case .sse:
            return TestClient(try await SSESignalingConnection.connect(baseURL: baseURL, sid: sid, roomId: roomId, timeout: .seconds(5)))
        }
    }

    init(_ connection: any SignalingConnection) {
        self.connection = connection
        let inbox = self.inbox
        reader = Task {
            for await event in connection.events { await inbox.put(event) }
        }
    }

    var kind: SignalingTransportKind { connection.kind }

    func send(_ type: MessageType, rid: String? = nil, to: String? = nil, payload: JSONValue = [:]) async throws {
        try await connection.send(Envelope(type, rid: rid, to: to, payload: payload))
    }

    func send(_ type: MessageType, rid: String? = nil, _ payload: some Encodable) async throws {
        try await connection.send(Envelope(type, rid: rid, payload: try JSONValue(encoding: payload)))
    }

    /// Sends raw text (malformed input tests).
    func sendRaw(_ text: String) async throws {
        switch connection {
        case let ws as WebSocketSignalingConnection: try ws.sendRaw(text)
        case let sse as SSESignalingConnection: try await sse.sendRaw(text)
        default: throw TestFailure("unknown transport")
        }
    }

    /// How long a test waits for a message it expects. Not a promise of the product's (a test that times a promise
    /// passes its own bound): a wait that ends when the message comes, bounded so that a missing one fails the test.
    /// 15 s, not 5: at the start of a suite run, with the sweeps on both cores and a hundred tests starting, a room_state
    /// due 1.5 s after a disconnect took over 5 s to arrive (ReconnectTests, run 20261206T074742Z-4b81c5).
    static let expectTimeout: Duration = .seconds(15)

    /// The first message of `type` (messages of other types stay in the inbox).
    @discardableResult
    func expect(
        _ type: MessageType, timeout: Duration = TestClient.expectTimeout,
        where predicate: @escaping @Sendable (Envelope) -> Bool = { _ in true }
    ) async throws -> Envelope {
        let found = await inbox.take(timeout: timeout) { event in
            if case .message(let envelope) = event, envelope.type == type.rawValue, predicate(envelope) { return true }
            return false
        }
        guard case .message(let envelope)? = found else {
            throw TestFailure("no \(type.rawValue) within \(timeout); inbox: \(await inbox.summary())")
        }
        return envelope
    }

    /// The first message of one of `types`, or nil if none comes within `timeout`.
    func first(of types: Set<MessageType>, timeout: Duration = .seconds(5)) async -> Envelope? {
        let names = Set(types.map(\.rawValue))
        let found = await inbox.take(timeout: timeout) { event in
            if case .message(let envelope) = event { return names.contains(envelope.type) }
            return false
        }
        guard case .message(let envelope)? = found else { return nil }
        return envelope
    }

    /// The first message of `type` that matches, or nil once the connection closed before one came (the close stays in
    /// the inbox for `expectClosed`).
    func untilClosed(
        _ type: MessageType, timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (Envelope) -> Bool = { _ in true }
    ) async -> Envelope? {
        let found = await inbox.take(timeout: timeout) { event in
            switch event {
            case .message(let envelope): envelope.type == type.rawValue && predicate(envelope)
            case .closed: true
            case .undecodable: false
            }
        }
        switch found {
        case .message(let envelope)?: return envelope
        case let closed?:
            await inbox.put(closed)
            return nil
        case nil: return nil
        }
    }

    func expectError(_ code: ErrorCode, timeout: Duration = TestClient.expectTimeout) async throws -> ErrorPayload {
        let envelope = try await expect(.error, timeout: timeout) { $0.payload["code"]?.stringValue == code.rawValue }
        return try envelope.payload.decode(ErrorPayload.self)
    }

    /// Asserts nothing of `type` arrives within `window`.
    func expectNo(_ type: MessageType, within window: Duration = .milliseconds(300)) async throws {
        let found = await inbox.take(timeout: window) { event in
            if case .message(let envelope) = event, envelope.type == type.rawValue { return true }
            return false
        }
        if let found { throw TestFailure("unexpected \(type.rawValue): \(found)") }
    }

    func expectClosed(timeout: Duration = .seconds(5)) async throws -> SignalingCloseReason {
        let found = await inbox.take(timeout: timeout) { event in
            if case .closed = event { return true }
            return false
        }
        guard case .closed(let reason)? = found else { throw TestFailure("not closed within \(timeout); inbox: \(await inbox.summary())") }
        return reason
    }

    func join(_ rid: String, _ payload: JoinPayload = JoinPayload()) async throws -> Joined {
        try await send(.join, rid: rid, payload)
        let envelope = try await expect(.joined)
        return Joined(envelope: envelope, payload: try envelope.payload.decode(JoinedPayload.self))
    }

    func roomState(timeout: Duration = .seconds(5), where predicate: @escaping @Sendable (RoomStatePayload) -> Bool = { _ in true })
        async throws -> RoomStatePayload
    {
        let envelope = try await expect(.roomState, timeout: timeout) { envelope in
            (try? envelope.payload.decode(RoomStatePayload.self)).map(predicate) ?? false
        }
        return try envelope.payload.decode(RoomStatePayload.self)
    }

    /// Like `roomState`, and every `room_state` that came before the matching one is dropped: what the client waits
    /// for next is newer than this state. Wait for the state a change starts from before making the change, or a
    /// stale state queued earlier (the one-participant state after the host's own join) matches what the change
    /// should produce.
    @discardableResult
    func settledRoomState(timeout: Duration = .seconds(5), where predicate: @escaping @Sendable (RoomStatePayload) -> Bool) async throws
        -> RoomStatePayload
    {
        let isRoomState: @Sendable (SignalingEvent) -> Bool = { event in
            if case .message(let envelope) = event { return envelope.type == MessageType.roomState.rawValue }
            return false
        }
        let found = await inbox.take(timeout: timeout, droppingEarlier: isRoomState) { event in
            guard isRoomState(event), case .message(let envelope) = event else { return false }
            return (try? envelope.payload.decode(RoomStatePayload.self)).map(predicate) ?? false
        }
        guard case .message(let envelope)? = found else {
            throw TestFailure("no matching room_state within \(timeout); inbox: \(await inbox.summary())")
        }
        return try envelope.payload.decode(RoomStatePayload.self)
    }

    func close() async {
        await connection.close()
        reader.cancel()
    }

    struct Joined {
        var envelope: Envelope
        var payload: JoinedPayload
        var cid: String { envelope.cid ?? "" }
        var token: String { payload.reconnectToken }
    }
}

actor Inbox {
    private var events: [SignalingEvent] = []
    private var waiters: [Waiter] = []

    private struct Waiter {
        var id: UUID
        var match: @Sendable (SignalingEvent) -> Bool
        /// Queued events this selects are removed when the match comes: they all came before it.
        var dropEarlier: (@Sendable (SignalingEvent) -> Bool)?
        var continuation: CheckedContinuation<SignalingEvent?, Never>
    }

    func put(_ event: SignalingEvent) {
        if let index = waiters.firstIndex(where: { $0.match(event) }) {
            let waiter = waiters.remove(at: index)
            if let dropEarlier = waiter.dropEarlier { events.removeAll(where: dropEarlier) }
            waiter.continuation.resume(returning: event)
        } else {
            events.append(event)
        }
    }

    func take(
        timeout: Duration, droppingEarlier dropEarlier: (@Sendable (SignalingEvent) -> Bool)? = nil,
        matching match: @escaping @Sendable (SignalingEvent) -> Bool
    ) async -> SignalingEvent? {
        if let index = events.firstIndex(where: match) {
            let found = events.remove(at: index)
            if let dropEarlier {
                let earlier = events[..<index].filter { !dropEarlier($0) }
                events.replaceSubrange(..<index, with: earlier)
            }
            return found
        }
        let id = UUID()
        let timer = Task {
            try await Task.sleep(for: timeout)
            self.expire(id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            waiters.append(Waiter(id: id, match: match, dropEarlier: dropEarlier, continuation: continuation))
        }
    }

    private func expire(_ id: UUID) {
        if let index = waiters.firstIndex(where: { $0.id == id }) {
            waiters.remove(at: index).continuation.resume(returning: nil)
        }
    }

    func summary() -> String {
        events.map { event in
            switch event {
            case .message(let envelope):
                envelope.type + (envelope.type == "error" ? "(\(envelope.payload["code"]?.stringValue ?? ""))" : "")
            case .undecodable(let text): "undecodable(\(text.prefix(40)))"
            case .closed(let reason): "closed(\(reason))"
            }
        }.joined(separator: ", ")
    }
}
