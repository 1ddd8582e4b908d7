import AsyncHTTPClient
import DuetLock
import DuetProtocol
import Foundation
import Logging
import NIOCore

/// Signaling over Server-Sent Events: `GET /sse?sid=` is the downlink, each message goes up as a
/// `POST /sse?sid=`. POSTs are sent one at a time so the server sees them in order.
public final class SSESignalingConnection: SignalingConnection {
    public let kind = SignalingTransportKind.sse
    public let sid: String
    public let events: AsyncStream<SignalingEvent>
    private let posts: AsyncStream<Post>.Continuation
    private let task: Task<Void, Never>
    private let closedByClient: SharedFlag
    private let pending: PendingReplies
    private let boundToken: SharedToken
    /// This stream's POST token, from its first message (`sse_session`).
    public var postToken: String? { boundToken.value }

    private struct Post: Sendable {
        var id: Int
        var body: String
    }

    private init(
        sid: String, events: AsyncStream<SignalingEvent>, posts: AsyncStream<Post>.Continuation, task: Task<Void, Never>,
        closedByClient: SharedFlag, pending: PendingReplies, postToken: SharedToken
    ) {
        self.pending = pending
        self.boundToken = postToken
        self.sid = sid
        self.events = events
        self.posts = posts
        self.task = task
        self.closedByClient = closedByClient
    }

    /// - Parameters:
    ///   - baseURL: the server, e.g. `http://127.0.0.1:8080/`.
    ///   - sid: reuse the same sid across reconnects (the server ties a seat to it).
    ///   - silenceTimeout: the server comments every 12 s; this much silence means the stream is dead.
    ///   - roomId: the room this connection is for, sent as `&rid=` on the stream and every POST (`SignalingURL`).
    ///   - via: the node a drain named for the room, sent as `&via=` beside it.
    public static func connect(
        baseURL: String, sid: String = SessionIdFormat.random(), roomId: String? = nil, via: String? = nil,
        timeout: Duration,
        silenceTimeout: Duration = .seconds(30), headers: [(String, String)] = [],
        http: HTTPClient = .shared, logger: Logger = Logger(label: "duet.sse")
    ) async throws(SignalingConnectError) -> SSESignalingConnection {
        let streamURL = SignalingURL.sse(server: baseURL, sid: sid, roomId: roomId, via: via)
        let (events, eventSink) = AsyncStream<SignalingEvent>.makeStream()
        let (postStream, posts) = AsyncStream<Post>.makeStream()
        let opened = OneShot<Result<Void, SignalingConnectError>>()
        let closedByClient = SharedFlag()
        let activity = ActivityClock()
        /// The close code and reason the server announced before ending the stream.
        let serverClose = AnnouncedClose()
        let pending = PendingReplies()
        /// This stream's POST token (`sse_session`): the sid is in URLs, so it is not what authorizes a POST.
        let postToken = SharedToken()

        let task = Task {
            let poster = Task {
                for await post in postStream {
                    var request = HTTPClientRequest(url: streamURL)
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json")
                    if let token = postToken.value { request.headers.add(name: SSEPostBinding.header, value: token) }
                    for (name, value) in headers { request.headers.add(name: name, value: value) }
                    request.body = .bytes(ByteBuffer(string: post.body))
                    do {
                        let response = try await http.execute(request, timeout: .seconds(10), logger: logger)
                        _ = try? await response.body.collect(upTo: 64 * 1024)
                        pending.resolve(post.id, with: .success(Int(response.status.code)))
                    } catch {
                        pending.resolve(post.id, with: .failure(error))
                    }
                }
            }
            defer { poster.cancel() }
            var reason = SignalingCloseReason.byServer(code: nil, reason: nil)
            do {
                var request = HTTPClientRequest(url: streamURL)
                request.headers.add(name: "Accept", value: "text/event-stream")
                for (name, value) in headers { request.headers.add(name: name, value: value) }
                let response = try await http.execute(request, timeout: .seconds(Int64(timeout.components.seconds) + 1), logger: logger)
                guard response.status == .ok else {
                    opened.fulfil(.failure(.refused(status: Int(response.status.code))))
                    throw CancellationError()
                }
                // Silence counts from the answer, not from the request: a server slow to answer is not a dead stream.
                activity.touch()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        // The watchdog ends the read when the stream goes silent (half-open). It sleeps until the
                        // silence could first reach the limit, not on a fixed tick: a stream that hears the server's
                        // comments wakes it about once per `silenceTimeout`, not four times a second.
                        while true {
                            let silence = activity.silence
                            if silence > silenceTimeout { throw SilentStream() }
                            try await Task.sleep(for: silenceTimeout - silence + .milliseconds(10))
                        }
                    }
                    group.addTask {
                        var parser = SSEParser()
                        for try await chunk in response.body {
                            activity.touch()
                            for item in parser.feed(chunk.readableBytesView) {
                                switch item {
                                case .comment(let text) where text.hasPrefix("close "): serverClose.set(Self.closeComment(text))
                                case .comment: break
                                case .data(let text):
                                    // The stream is open once it has said how to POST to it: nothing is posted before.
                                    if let token = SSEPostBinding.token(inFirstMessage: text) {
                                        postToken.value = token
                                        opened.fulfil(.success(()))
                                    } else {
                                        eventSink.yield(WebSocketSignalingConnection.event(from: Array(text.utf8)))
                                    }
                                }
                            }
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch is SilentStream {
                opened.fulfil(.failure(.unreachable("the stream was silent for \(silenceTimeout) before it said how to post")))
                reason = .silent
            } catch is CancellationError {
            } catch {
                opened.fulfil(.failure(.unreachable("\(error)")))
                reason = .failed("\(error)")
            }
            // A stream that ended before its first message: `connect` says so now, not at its timeout (does nothing
            // once it opened).
            opened.fulfil(.failure(.unreachable("the stream ended before it said how to post")))
            // The server said why it ended the stream (`: close CODE REASON`): the same reason a WebSocket would give.
            if case .byServer(nil, nil) = reason, let (code, text) = serverClose.announced { reason = .byServer(code: code, reason: text) }
            eventSink.yield(.closed(closedByClient.isSet ? .byClient : reason))
            eventSink.finish()
            posts.finish()
            // Whatever was still queued will never be posted: tell the senders.
            pending.failAll(SignalingSendError.notConnected)
        }
        switch await opened.wait(timeout: timeout) {
        case .success?:
            return SSESignalingConnection(
                sid: sid, events: events, posts: posts, task: task, closedByClient: closedByClient, pending: pending, postToken: postToken)
        case .failure(let error)?:
            task.cancel()
            throw error
        case nil:
            task.cancel()
            throw .timedOut
        }
    }

    /// `close 4001 replaced` → (4001, "replaced"); nil for anything else.
    static func closeComment(_ text: String) -> (code: Int, reason: String)? {
        let fields = text.split(separator: " ", maxSplits: 2)
        guard fields.count >= 2, fields[0] == "close", let code = Int(fields[1]) else { return nil }
        return (code, fields.count == 3 ? String(fields[2]) : "")
    }

    public func send(_ envelope: Envelope) async throws {
        try await sendRaw(envelope.encodedString())
    }

    /// POSTs text as is; throws `SignalingSendError.rejected` for any status but 204.
    public func sendRaw(_ text: String) async throws {
        let status: Int = try await withCheckedThrowingContinuation { continuation in
            let id = pending.add(continuation)
            if case .terminated = posts.yield(Post(id: id, body: text)) {
                pending.resolve(id, with: .failure(SignalingSendError.notConnected))
            }
        }
        guard status == 204 else { throw SignalingSendError.rejected(status: status) }
    }

    public func close() async {
        closedByClient.set()
        task.cancel()
        let task = self.task
        await awaitAtMost(.seconds(2)) { await task.value }
    }

    /// Drops the stream as a dying network would: the events end with a failure, not `.byClient`.
    public func abort() async {
        task.cancel()
        let task = self.task
        await awaitAtMost(.seconds(2)) { await task.value }
    }

    private struct SilentStream: Error {}
}

/// The stream's POST token, written once by the reader and read by every POST.
final class SharedToken: Sendable {
    private let state = Mutex<String?>(nil)
    var value: String? {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

/// Senders waiting for their POST's status; every one is answered exactly once, also when the
/// connection ends with POSTs still queued.
final class PendingReplies: Sendable {
    private let state = Mutex<(next: Int, waiting: [Int: CheckedContinuation<Int, any Error>])>((0, [:]))

    func add(_ continuation: CheckedContinuation<Int, any Error>) -> Int {
        state.withLock { state in
            state.next += 1
            state.waiting[state.next] = continuation
            return state.next
        }
    }

    func resolve(_ id: Int, with result: Result<Int, any Error>) {
        state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(with: result)
    }

    func failAll(_ error: any Error) {
        let all = state.withLock { state in
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in all { continuation.resume(throwing: error) }
    }
}
