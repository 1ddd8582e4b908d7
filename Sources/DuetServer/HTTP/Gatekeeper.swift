import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// The checks every entry point shares: origin, per-address rate, connection caps. Returns the refusal, if any.
struct Gatekeeper: Sendable {
    let origins: OriginPolicy
    let addresses: ClientAddressResolver
    let upgrades: IPRateLimiter
    let sse: IPRateLimiter
    let api: IPRateLimiter
    let connections: ConnectionLimiter
    let metrics: ServerMetrics

    enum Entry: String { case ws, sse, api }

    struct Refusal: Error {
        var status: HTTPResponse.Status
        var message: String
        var retryAfterSeconds: Int?

        var response: Response {
            var response = Response.text(status, message)
            if let retryAfterSeconds { response.headers[.retryAfter] = "\(retryAfterSeconds)" }
            return response
        }
    }

    /// What the checks read of a request: the same for a routed request and for a WebSocket upgrade, which NIO
    /// hands over as a bare `HTTPRequestHead` before any router or request context exists.
    struct Caller {
        var origin: String?
        var authority: String?
        var forwardedFor: [String]
        var forwarded: [String]
        var peer: String?

        init(_ request: Request, context: DuetRequestContext) {
            self.init(request.head, peer: context.remoteAddress)
        }

        /// A request head as the HTTP codec hands it over (routed requests, and the SSE handler's).
        init(_ head: HTTPRequest, peer: SocketAddress?) {
            origin = head.headerFields[.origin]
            authority = head.authority
            forwardedFor = head.headerFields[values: .init("X-Forwarded-For")!]
            forwarded = head.headerFields[values: .init("Forwarded")!]
            self.peer = peer?.ipAddress
        }

        init(head: HTTPRequestHead, peer: SocketAddress?) {
            // Several Origin fields read as their combination, as `HTTPFields` does for routed requests: a client that
            // sends its own and a forged one is not let through by the first.
            let origins = head.headers["Origin"]
            origin = origins.isEmpty ? nil : origins.joined(separator: ", ")
            authority = head.headers.first(name: "Host")
            forwardedFor = head.headers["X-Forwarded-For"]
            forwarded = head.headers["Forwarded"]
            self.peer = peer?.ipAddress
        }
    }

    /// The client's rate-limit key: its address (IPv6: its /64), read through trusted proxies only.
    func clientKey(_ caller: Caller) -> String {
        addresses.clientKey(peer: caller.peer, forwardedFor: caller.forwardedFor, forwarded: caller.forwarded)
    }

    func refusal(_ request: Request, context: DuetRequestContext, entry: Entry, consume: Bool = true) -> Refusal? {
        refusal(Caller(request, context: context), entry: entry, consume: consume)
    }

    func refusal(_ caller: Caller, entry: Entry, consume: Bool = true) -> Refusal? {
        guard origins.permits(origin: caller.origin, host: caller.authority) else { return reject(entry, .forbidden, "origin not allowed") }
        guard consume else { return nil }
        let limiter =
            switch entry {
            case .ws: upgrades
            case .sse: sse
            case .api: api
            }
        guard limiter.allow(clientKey(caller), nowMs: Int64(Date().timeIntervalSince1970 * 1000)) else {
            return reject(entry, .tooManyRequests, "too many requests from this address; back off and retry", retryAfter: 1)
        }
        return nil
    }

    /// Takes a connection slot for a WebSocket or SSE stream, or says why not (503 + Retry-After).
    func admit(_ request: Request, context: DuetRequestContext, entry: Entry) -> Result<ConnectionLimiter.Ticket, Refusal> {
        admit(Caller(request, context: context), entry: entry)
    }

    func admit(_ caller: Caller, entry: Entry) -> Result<ConnectionLimiter.Ticket, Refusal> {
        switch connections.admit(clientKey(caller)) {
        case .success(let ticket): return .success(ticket)
        case .failure(let cap): return .failure(capRefusal(cap, entry: entry))
        }
    }

    /// Why a connection from this client would be refused for a cap now, if it would.
    func capRefusal(_ request: Request, context: DuetRequestContext, entry: Entry) -> Refusal? {
        capRefusal(Caller(request, context: context), entry: entry)
    }

    func capRefusal(_ caller: Caller, entry: Entry) -> Refusal? {
        connections.wouldRefuse(clientKey(caller)).map { capRefusal($0, entry: entry) }
    }

    private func capRefusal(_ cap: ConnectionLimiter.Refusal, entry: Entry) -> Refusal {
        switch cap {
        case .perAddress:
            reject(
                entry, .serviceUnavailable, "too many open connections from this address (\(connections.limits.perAddress)); retry later",
                retryAfter: 5)
        case .total:
            reject(entry, .serviceUnavailable, "the server is at its connection limit; retry later", retryAfter: 5)
        }
    }

    private func reject(_ entry: Entry, _ status: HTTPResponse.Status, _ message: String, retryAfter: Int? = nil) -> Refusal {
        metrics.httpRejected(entry.rawValue, status: status.code)
        return Refusal(status: status, message: message, retryAfterSeconds: retryAfter)
    }
}

extension Response {
    static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: body + "\n")))
    }

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// JSON of Foundation values (arrays and dictionaries of strings, numbers and booleans).
    static func jsonObject(_ value: Any, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension Gatekeeper.Refusal {
    /// What a draining node answers a new session (`/ws` upgrade, `/sse` stream): a status a proxy retries on the next
    /// node (`proxy_next_upstream http_503`, deploy/nginx/duet-cluster.conf) and a client without one waits on.
    static let draining = Self(status: .serviceUnavailable, message: "server is draining; reconnect shortly", retryAfterSeconds: 1)
}
