import Hummingbird

/// `/healthz` and `/metrics`.
struct OperationsRoutes: Sendable {
    let hub: SessionHub
    let metrics: ServerMetrics

    func register(on router: Router<DuetRequestContext>) {
        router.get("/healthz") { _, _ -> Response in
            hub.isDraining ? .text(.serviceUnavailable, "draining") : .text(.ok, "ok")
        }
        router.get("/metrics") { _, _ -> Response in
            let snapshot = hub.snapshot()
            metrics.roomCounts(rooms: snapshot.rooms, connected: snapshot.connected, suspended: snapshot.suspended)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
        }
    }
}
