import DuetLock
import DuetProtocol
import Foundation
import HTTPTypes
import NIOCore

/// Server-Sent Events fallback (docs/protocol.md, Transports): `GET /sse?sid=` streams messages, `POST /sse?sid=`
/// carries one message. What each request is answered, decided on the event loop by `SSEConnectionHandler` — no
/// router, no task per stream or per POST (docs/benchmarks.md: those made an SSE message cost several times a
/// WebSocket's, and the fallback's join latency 160× WebSocket's under load).
struct SSEEndpoint: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper
    let pingInterval: TimeAmount
    /// What every response of the server carries (`SecurityHeadersMiddleware`, `Server`).
    let commonHeaders: HTTPFields

    /// An answer that is not a stream: a status, a text, maybe `Retry-After`.
    typealias Answer = Gatekeeper.Refusal

    /// Whether this request is the SSE endpoint's (every other request goes on to the router): `/sse`, or `/sse/` as
    /// the router before it took both, whatever the method (those it does not take are answered 405).
    static func handles(_ head: HTTPRequest) -> Bool {
        guard let path = head.path else { return false }
        let route = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return route == "/sse" || route == "/sse/"
    }

    /// The query's `sid`, when it is well formed.
    static func sid(of head: HTTPRequest) -> String? {
        guard let path = head.path, let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "sid" else { continue }
            let value = String(parts[1]).removingPercentEncoding ?? ""
            return SessionIdFormat.isWellFormed(value) ? value : nil
        }
        return nil
    }

    static let badSid = Answer(status: .badRequest, message: "sid is required: S- followed by 16 lowercase hex digits")
    /// Any method but GET and POST (HEAD too: a stream's head cannot be told without opening it), with `Allow`.
    static let methodNotAllowed = Answer(status: .methodNotAllowed, message: "/sse takes GET (the stream) and POST (one message)")
    static let tooLarge = Answer(status: .contentTooLarge, message: "messages are limited to \(ProtocolLimits.maxMessageBytes) bytes")

    /// A new stream: its sid and connection slot, or why not.
    func openStream(_ head: HTTPRequest, peer: SocketAddress?) -> Result<(sid: String, ticket: ConnectionLimiter.Ticket), Answer> {
        guard let sid = Self.sid(of: head) else { return .failure(Self.badSid) }
        let caller = Gatekeeper.Caller(head, peer: peer)
        if let refusal = gate.refusal(caller, entry: .sse) { return .failure(refusal) }
        if hub.isDraining { return .failure(Answer.draining) }
        return gate.admit(caller, entry: .sse).map { (sid, $0) }
    }

    /// A POST's head: its sid and post token, or why it is refused before its body is read.
    func acceptPost(_ head: HTTPRequest, peer: SocketAddress?) -> Result<(sid: String, postToken: String?), Answer> {
        guard let sid = Self.sid(of: head) else { return .failure(Self.badSid) }
        if let refusal = gate.refusal(Gatekeeper.Caller(head, peer: peer), entry: .sse, consume: false) { return .failure(refusal) }
        return .success((sid, head.headerFields[HTTPField.Name(SSEPostBinding.header)!]))
    }

    /// A POST's whole body: one message for the stream of `sid` that `postToken` belongs to. Nil: accepted (204).
    func deliver(_ bytes: [UInt8], sid: String, postToken: String?) -> Answer? {
        switch hub.receive(bytes, sid: sid, postToken: postToken) {
        case .accepted: nil
        case .wrongPostToken:
            Answer(
                status: .unauthorized,
                message:
                    "\(SSEPostBinding.header) is missing or is not this stream's token (the stream's first message, sse_session, gives it)")
        case .unknownSession: Answer(status: .gone, message: "no open stream for this sid; open GET /sse?sid= again")
        case .unauthorized:
            Answer(
                status: .unauthorized,
                message: "this sid belongs to a participant: the first message must be a join with its reconnectCid and reconnectToken")
        }
    }

    // MARK: - What is written

    func streamHead(closing: Bool) -> HTTPResponse {
        var fields = commonHeaders
        if closing { fields[.connection] = "close" }
        fields[.contentType] = "text/event-stream"
        fields[.cacheControl] = "no-store"
        fields[HTTPField.Name("X-Accel-Buffering")!] = "no"
        fields[.date] = HTTPDate.now()
        return HTTPResponse(status: .ok, headerFields: fields)
    }

    /// The stream's first bytes: it is usable (the client may POST) as soon as they arrive.
    static func streamOpening(postToken: String) -> String {
        let session = SSEPostBinding.firstMessage(postToken: postToken, nowMs: Int64(Date().timeIntervalSince1970 * 1000)).encodedString()
        return ": ready\n\ndata: \(session)\n\n"
    }

    static func event(_ text: String) -> String { "data: \(text)\n\n" }
    static let ping = ": ping\n\n"
    /// What a WebSocket close frame would say, as a comment (older clients just hear a ping): the client acts on the
    /// code (4001: a newer connection proved this seat — stop, do not fight for it).
    static func close(_ code: CloseCode, reason: String) -> String { ": close \(code.rawValue) \(reason)\n\n" }

    /// A complete non-streaming response: status and text (the router's `Response.text`), or 204 without a body.
    func answer(_ answer: Answer?, closing: Bool) -> (HTTPResponse, ByteBuffer?) {
        var fields = commonHeaders
        fields[.date] = HTTPDate.now()
        if closing { fields[.connection] = "close" }
        guard let answer else {
            return (HTTPResponse(status: .noContent, headerFields: fields), nil)
        }
        let body = ByteBuffer(string: answer.message + "\n")
        fields[.contentType] = "text/plain; charset=utf-8"
        fields[.contentLength] = "\(body.readableBytes)"
        if let seconds = answer.retryAfterSeconds { fields[.retryAfter] = "\(seconds)" }
        if answer.status == .methodNotAllowed { fields[.allow] = "GET, POST" }
        return (HTTPResponse(status: answer.status, headerFields: fields), body)
    }
}

/// The `Date` header's value (RFC 9110 §5.6.7), formatted at most once a second for all connections.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))

    static func now() -> String {
        let now = Date()
        let second = Int(now.timeIntervalSince1970)
        return cache.withLock { cached in
            if cached.second != second { cached = (second, format(now)) }
            return cached.text
        }
    }

    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
