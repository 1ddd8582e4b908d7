import Foundation
import HTTPTypes
import Hummingbird

/// The checks every entry point shares: origin, per-IP rate, draining. Returns the refusal, if any.
struct Gatekeeper: Sendable {
    let origins: OriginPolicy
    let upgrades: IPRateLimiter
    let sse: IPRateLimiter
    let api: IPRateLimiter
    let metrics: ServerMetrics

    enum Entry: String { case ws, sse, api }

    func refusal(_ request: Request, context: DuetRequestContext, entry: Entry, consume: Bool = true) -> HTTPResponse.Status? {
        let origin = request.headers[.origin]
        let host = request.head.authority
        guard origins.permits(origin: origin, host: host) else { return reject(entry, .forbidden) }
        guard consume else { return nil }
        let limiter = switch entry {
        case .ws: upgrades
        case .sse: sse
        case .api: api
        }
        guard limiter.allow(context.clientAddress, nowMs: Int64(Date().timeIntervalSince1970 * 1000)) else {
            return reject(entry, .tooManyRequests)
        }
        return nil
    }

    private func reject(_ entry: Entry, _ status: HTTPResponse.Status) -> HTTPResponse.Status {
        metrics.httpRejected(entry.rawValue, status: status.code)
        return status
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
}
