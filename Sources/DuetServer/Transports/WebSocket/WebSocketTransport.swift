import DuetProtocol
import Hummingbird
import NIOCore
import NIOHTTP1

/// `GET /ws`: one JSON message per text frame, bridged to the session hub by `WebSocketConnectionHandler`.
///
/// The upgrade is decided on the event loop, before any router or task exists (`DuetHTTPChannel`): `decide` runs the
/// same gate as every other entry point and its refusal is answered with its real status.
struct WebSocketTransport: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper
    let blocked: Bool
    let settings: WebSocketConnectionHandler.Settings
    /// The largest frame the decoder accepts. Messages are refused past the protocol limit (`MESSAGE_TOO_LARGE`, then
    /// 1009) as they grow; a single frame announcing more than this is cut by the decoder (1009).
    static let socketMessageCap = 1 << 20

    enum Decision {
        case upgrade
        case refuse(Gatekeeper.Refusal)
    }

    func decide(_ head: HTTPRequestHead, peer: SocketAddress?) -> Decision {
        guard head.uri == "/ws" || head.uri.hasPrefix("/ws?") else {
            return .refuse(.init(status: .notFound, message: "no WebSocket endpoint at this path; use /ws"))
        }
        if blocked { return .refuse(.init(status: .forbidden, message: "WebSocket is disabled on this server; use /sse")) }
        let caller = Gatekeeper.Caller(head: head, peer: peer)
        if let refusal = gate.refusal(caller, entry: .ws) { return .refuse(refusal) }
        // A 503 is what `proxy_next_upstream http_503` passes on: nginx tries the next node of the ring and takes this
        // one out for `fail_timeout`, so a draining node's rooms move at once (deploy/nginx/duet-cluster.conf). A
        // client without a proxy is told why and when to come back (it used to be closed unanswered: issue 34).
        if hub.isDraining { return .refuse(Gatekeeper.Refusal.draining) }
        // Only a check here: the slot is taken when the upgrade completes (`handler`), by the connection itself.
        if let refusal = gate.capRefusal(caller, entry: .ws) { return .refuse(refusal) }
        return .upgrade
    }

    /// The connection's handler, once the 101 is written: it takes the connection slot, or closes 1013 if the
    /// server filled up since `decide`.
    func handler(_ head: HTTPRequestHead, peer: SocketAddress?) -> WebSocketConnectionHandler {
        WebSocketConnectionHandler(
            hub: hub, settings: settings, limiter: gate.connections, roomHint: RoomHint.rid(in: head.uri),
            admission: gate.admit(Gatekeeper.Caller(head: head, peer: peer), entry: .ws))
    }

    /// A plain `GET /ws` (no upgrade) says what would happen to an upgrade now, with a status.
    func registerRefusals(on router: Router<DuetRequestContext>) {
        router.get("/ws") { request, context -> Response in
            if blocked { return .text(.forbidden, "WebSocket is disabled on this server; use /sse") }
            if let refusal = gate.refusal(request, context: context, entry: .ws, consume: false) { return refusal.response }
            if hub.isDraining { return Gatekeeper.Refusal.draining.response }
            if let refusal = gate.capRefusal(request, context: context, entry: .ws) { return refusal.response }
            return .text(.upgradeRequired, "this endpoint speaks WebSocket")
        }
    }
}
