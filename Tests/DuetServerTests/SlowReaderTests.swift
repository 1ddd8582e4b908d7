import AsyncHTTPClient
import DuetProtocol
import DuetTestSupport
import DuetTransport
import Foundation
import NIOCore
import Testing

/// A client that stops reading cannot make the server buffer what its partner sends: its queue is bounded
/// (`OutboundBound`), it is cut off and its seat suspended, and the partner is told — while the server's memory stays
/// flat. The server runs as its own process so that its RSS is measured alone.
@Suite struct SlowReaderTests {
    @Test(
        "a reader that stops reading is cut off, its partner is told, the server's memory stays bounded",
        arguments: SignalingTransportKind.allCases)
    func readerThatStopsReading(kind: SignalingTransportKind) async throws {
        // Two cores: a partner pushing 3 MB/s must not run beside a browser scenario or another such run.
        try await OneAtATime.heavyWork.run { try await run(kind) }
    }

    private func run(_ kind: SignalingTransportKind) async throws {
        let server = try await ServerProcess.start(["--rate-limit", "off"])
        defer { Task { await server.stop() } }
        let roomId = try await HTTPClient.shared.execute(HTTPClientRequest(url: server.baseURL + "api/room-id"), timeout: .seconds(10))
        let rid =
            try #require(try JSONSerialization.jsonObject(with: Data(buffer: try await roomId.body.collect(upTo: 4096))) as? [String: Any])[
                "roomId"] as! String

        // The reader joins with a tiny receive buffer, then never reads again.
        let reader: RawSocket
        switch kind {
        case .ws:
            let (socket, status) = try await RawSocket.webSocket(port: server.port, receiveBuffer: 4096)
            #expect(status.contains("101"), "\(status)")
            try await socket.sendText(Envelope(.join, rid: rid, payload: ["capabilities": ["trickleIce": true]]).encodedString())
            _ = try await socket.receive(until: "joined")
            reader = socket
        case .sse:
            let sid = SessionIdFormat.random()
            let socket = try await RawSocket.connect(port: server.port, receiveBuffer: 4096)
            try await socket.send("GET /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            let head = try await socket.receive(until: "\"}}\n")
            let line = try #require(head.split(separator: "\n").first { $0.contains("sse_session") }, "\(head)")
            let token = try #require(SSEPostBinding.token(inFirstMessage: String(line.dropFirst("data: ".count))))
            var post = HTTPClientRequest(url: server.baseURL + "sse?sid=" + sid)
            post.method = .POST
            post.headers.add(name: SSEPostBinding.header, value: token)
            post.body = .bytes(
                ByteBuffer(string: Envelope(.join, rid: rid, payload: ["capabilities": ["trickleIce": true]]).encodedString()))
            #expect(try await HTTPClient.shared.execute(post, timeout: .seconds(10)).status == .noContent)
            _ = try await socket.receive(until: "joined")
            reader = socket
        }
        defer { reader.close() }

        let partner = TestClient(try await WebSocketSignalingConnection.connect(url: server.webSocketURL, timeout: .seconds(10)))
        defer { Task { await partner.close() } }
        _ = try await partner.join(rid)
        let readerCid = try #require(try await partner.roomState { $0.participants.count == 2 }.participants.first?.cid)
        let baseline = server.residentBytes

        // 60 KB offers, 20 a second for 20 s: 24 MB if the server kept them all (with the bound removed the server
        // grows by about that much and this test fails); light enough not to starve the tests running beside it.
        // Encoded once: the test itself must not eat the CPU the server needs.
        let sdp = String(repeating: "a=x-padding:0123456789abcdef\r\n", count: 2_000)
        let offer = Envelope(.offer, rid: rid, payload: ["sdp": .string(sdp)]).encodedString()
        var peak = baseline
        let start = ContinuousClock.now
        var sent = 0
        while ContinuousClock.now - start < .seconds(20) {
            try await partner.sendRaw(offer)
            sent += 1
            if sent.isMultiple(of: 10) { peak = max(peak, server.residentBytes) }
            try await Task.sleep(until: start + .milliseconds(50 * sent))
        }
        peak = max(peak, server.residentBytes)

        let growth = peak - baseline
        print(
            "slow \(kind.rawValue) reader: \(sent) offers of \(sdp.utf8.count) bytes sent; server RSS \(baseline >> 20) MiB → peak \(peak >> 20) MiB (+\(growth >> 20) MiB)"
        )
        #expect(growth < 12 << 20, "the server grew by \(growth >> 20) MiB while a reader did not read")

        // The partner was told: the relay that did not fit, and the suspension.
        let failed = try await partner.expect(.relayFailed, timeout: .seconds(5)).payload.decode(RelayFailedPayload.self)
        #expect(failed.reason == .targetSuspended)
        #expect(failed.targets == [readerCid])
        #expect(failed.of == "offer")
        _ = try await partner.roomState { $0.participants.first { $0.cid == readerCid }?.connectionStatus == .suspended }
    }
}
