import Hummingbird

/// `/healthz`, `/metrics` and the pages a person opens.
struct OperationsRoutes: Sendable {
    let hub: SessionHub
    let metrics: ServerMetrics

    func register(on router: Router<DuetRequestContext>) {
        router.get("/healthz") { _, _ -> Response in
            await hub.isDraining ? .text(.serviceUnavailable, "draining") : .text(.ok, "ok")
        }
        router.get("/metrics") { _, _ -> Response in
            let snapshot = await hub.snapshot()
            metrics.roomCounts(rooms: snapshot.rooms, connected: snapshot.connected, suspended: snapshot.suspended)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
        }
        router.get("/") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: Self.homePage)))
        }
    }

    static let homePage = """
        <!doctype html><html lang="en"><meta charset="utf-8"><title>Duet</title>
        <h1>Duet signaling server</h1>
        <p>Resilient 1:1 WebRTC calling. Signaling: <code>/ws</code> (WebSocket) and <code>/sse</code> (Server-Sent Events).</p>
        </html>
        """
}
