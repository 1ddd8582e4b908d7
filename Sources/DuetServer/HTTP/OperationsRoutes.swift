import CMallocInfo
import DuetProtocol
import Hummingbird
import NIOCore

/// `/healthz` and `/metrics`.
struct OperationsRoutes: Sendable {
    let hub: SessionHub
    let metrics: ServerMetrics
    /// `--metrics-token`: with one set, `/metrics` needs `Authorization: Bearer <token>` (from anywhere); without,
    /// only loopback peers may read it. The TCP peer decides, never a forwarding header.
    let token: String?
    /// A loopback peer that is a trusted proxy, or that forwards for someone, is not "local": behind a proxy on the
    /// same host every internet request arrives from 127.0.0.1.
    let addresses: ClientAddressResolver
    /// The durable store's state, said by `/healthz` (still 200 when it is down: signaling works from memory).
    var store: StoreHealth? = nil
    /// The signaling connection caps, whose per-address table `/metrics` counts with the hub's tables.
    var connections: ConnectionLimiter? = nil

    func register(on router: Router<DuetRequestContext>) {
        router.get("/healthz") { _, _ -> Response in
            if hub.isDraining { return .text(.serviceUnavailable, "draining") }
            guard let store else { return .text(.ok, "ok") }
            return .text(.ok, "ok\n" + store.summary)
        }
        router.get("/metrics") { request, context -> Response in
            guard mayRead(request, peer: context.remoteAddress) else {
                return .text(
                    .forbidden,
                    token == nil
                        ? "/metrics is served to direct loopback peers only (not through a proxy); set --metrics-token to scrape it from elsewhere"
                        : "/metrics needs Authorization: Bearer <the --metrics-token>")
            }
            // Counted as seats change (SignalingCore.seatCounts): reading them does not walk the rooms under the lock.
            let snapshot = hub.snapshot()
            metrics.roomCounts(rooms: snapshot.rooms, connected: snapshot.connected, suspended: snapshot.suspended)
            metrics.heapInUse(bytes: Int(duet_heap_in_use_bytes()))
            var tables = hub.tableSizes()
            if let connections {
                tables["connection_slots"] = connections.openConnections
                tables["connection_slot_addresses"] = connections.addresses
            }
            metrics.tableEntries(tables)
            metrics.waitingForStore(hub.waitingForStore)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
        }
    }

    func mayRead(_ request: Request, peer: SocketAddress?) -> Bool {
        if let token {
            guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return false }
            return constantTimeEquals(Array(header.dropFirst(7).utf8), Array(token.utf8))
        }
        guard let address = peer?.ipAddress.flatMap({ IPAddress($0) }), !addresses.isTrusted(address),
            request.headers[values: .init("X-Forwarded-For")!].isEmpty, request.headers[values: .init("Forwarded")!].isEmpty
        else { return false }
        return address.bytes.count == 4 ? address.bytes[0] == 127 : address.bytes == [UInt8](repeating: 0, count: 15) + [1]
    }
}
