import DuetTestSupport
import Foundation
import Testing

@testable import DuetServer

/// The real server on an ephemeral port, met by raw sockets: the WebSocket rules and the refusal statuses that are
/// Duet's own since `/ws` runs on plain NIO handlers.
@Suite struct WebSocketRulesTests {
    static func closeCode(_ frames: [(opcode: UInt8, payload: [UInt8])]) -> Int? {
        frames.first { $0.opcode == 8 }.flatMap { $0.payload.count >= 2 ? Int($0.payload[0]) << 8 | Int($0.payload[1]) : nil }
    }

    @Test(arguments: [("unmasked", false, UInt8(0)), ("RSV1", true, UInt8(4)), ("RSV3", true, UInt8(1))])
    func aBrokenFrameGetsClose1002(_ name: String, _ masked: Bool, _ rsv: UInt8) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (socket, status) = try await RawSocket.webSocket(port: server.port)
        defer { socket.close() }
        #expect(status.contains("101"))
        try await socket.send(RawSocket.frame(opcode: 1, Array(#"{"v":1,"type":"ping"}"#.utf8), masked: masked, rsv: rsv))
        let frames = try await socket.readFrames { op, _ in op == 8 }
        #expect(Self.closeCode(frames) == 1002, "\(name): \(frames.map(\.opcode))")
        #expect(try await socket.receive().isEmpty, "\(name): the server closed the socket")
    }

    @Test func aPingFrameIsAnsweredWithItsPayloadAndTheCloseHandshakeCompletes() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (socket, _) = try await RawSocket.webSocket(port: server.port)
        defer { socket.close() }
        try await socket.send(RawSocket.frame(opcode: 9, Array("are you there".utf8)))
        let pong = try await socket.readFrames { op, _ in op == 10 }
        #expect(pong.last.map { String(decoding: $0.payload, as: UTF8.self) } == "are you there")
        try await socket.send(RawSocket.frame(opcode: 8, [0x03, 0xe8] + Array("bye".utf8)))
        let close = try await socket.readFrames { op, _ in op == 8 }
        #expect(Self.closeCode(close) == 1000)
        #expect(try await socket.receive().isEmpty)
    }

    /// An upgrade request's whole answer head.
    static func upgradeHead(port: Int, path: String = "/ws", source: String? = nil, headers: String = "") async throws -> String {
        let socket = try await RawSocket.connect(port: port, source: source)
        defer { socket.close() }
        try await socket.send(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(headers)\r\n")
        return try await socket.receive(until: "\r\n\r\n", limit: 8192)
    }

    /// A refused upgrade answers with the status that names why, which a client and nginx can act on.
    @Test func refusedUpgradesSayWhyWithTheirStatus() async throws {
        let server = try await TestServer.start {
            $0.rateLimits = true
            $0.allowedOrigins = ["https://duet.example"]
            $0.rateRules.upgrades = .init(capacity: 2, refillPerSecond: 0.001)
            $0.maxConnectionsPerAddress = 1
        }
        defer { Task { await server.stop() } }
        let origin = "Origin: https://duet.example\r\n"
        let (held, heldStatus) = try await RawSocket.webSocket(port: server.port, extraHeaders: origin)
        defer { held.close() }
        #expect(heldStatus.contains("101"))

        let foreign = try await Self.upgradeHead(port: server.port, headers: "Origin: https://evil.example\r\n")
        #expect(foreign.hasPrefix("HTTP/1.1 403"), "\(foreign)")
        #expect(foreign.lowercased().contains("connection: close"), "\(foreign)")

        // The second from this address is over the per-address cap (1 held).
        let capped = try await Self.upgradeHead(port: server.port, headers: origin)
        #expect(capped.hasPrefix("HTTP/1.1 503"), "\(capped)")
        #expect(capped.lowercased().contains("retry-after: 5"), "\(capped)")

        // The third is over the upgrade rate (2 per address, barely refilled).
        let limited = try await Self.upgradeHead(port: server.port, headers: origin)
        #expect(limited.hasPrefix("HTTP/1.1 429"), "\(limited)")
        #expect(limited.lowercased().contains("retry-after: 1"), "\(limited)")

        let elsewhere = try await Self.upgradeHead(port: server.port, path: "/nope", source: "127.0.0.2", headers: origin)
        #expect(elsewhere.hasPrefix("HTTP/1.1 404"), "\(elsewhere)")
    }

    @Test func aDisabledWebSocketIsRefused403() async throws {
        let server = try await TestServer.start { $0.blockWebSocket = true }
        defer { Task { await server.stop() } }
        let (socket, status) = try await RawSocket.webSocket(port: server.port)
        socket.close()
        #expect(status.hasPrefix("HTTP/1.1 403"), "\(status)")
    }

    /// Only a connection's first request can upgrade: a later one is sent to a new connection.
    @Test func anUpgradeOnAKeptAliveConnectionIsRedirectedToANewOne() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        try await socket.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let first = try await socket.receive(until: "\r\n\r\n")
        #expect(first.hasPrefix("HTTP/1.1 200"), "\(first)")
        try await socket.send(
            "GET /ws?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let second = try await socket.receive(until: "307", limit: 8192) + socket.receive(until: "\r\n\r\n", limit: 8192)
        #expect(second.contains("HTTP/1.1 307"), "\(second)")
        #expect(second.lowercased().contains("location: /ws?x=1"), "\(second)")
    }
}
