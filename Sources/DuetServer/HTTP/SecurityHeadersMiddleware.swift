import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// Headers every response carries, pages and API alike.
/// - `Content-Security-Policy`: scripts only from this origin, plus the inline scripts the pages ship (the load guard,
///   by its SHA-256) — no other inline script, no `eval`, nothing framed, no plugins.
/// - `Referrer-Policy: no-referrer`: the room link is the call's only secret and it is in the URL.
/// - `X-Content-Type-Options: nosniff`; `Permissions-Policy`: camera and microphone for this origin only.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    let contentSecurityPolicy: String

    init(inlineScripts: Set<String>) {
        contentSecurityPolicy = Self.policy(inlineScripts: inlineScripts)
    }

    static func policy(inlineScripts: Set<String>) -> String {
        let hashes = inlineScripts.sorted().map { "'sha256-" + Data(SHA256.hash(data: Data($0.utf8))).base64EncodedString() + "'" }
        return [
            "default-src 'self'",
            (["script-src 'self'"] + hashes).joined(separator: " "),
            "style-src 'self'",
            "img-src 'self' data:",
            "media-src 'self' blob:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        apply(to: &response.headers)
        return response
    }

    /// The same headers on a response written outside the router (`SSEConnectionHandler`).
    func apply(to fields: inout HTTPFields) {
        fields[.init("Content-Security-Policy")!] = contentSecurityPolicy
        fields[.init("Referrer-Policy")!] = "no-referrer"
        fields[.init("X-Content-Type-Options")!] = "nosniff"
        fields[.init("Permissions-Policy")!] = "camera=(self), microphone=(self), geolocation=(), payment=()"
    }
}
