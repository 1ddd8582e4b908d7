import DuetTestSupport
import Foundation
import NIOHTTP1
import Testing

@testable import DuetServer

/// Upgrades NIO's upgrader would drop without an answer, met by raw sockets on the real server: a broken WebSocket
/// upgrade gets its status and the socket closes; an upgrade to a protocol Duet does not speak is served as HTTP/1.1.
@Suite struct UpgradeRequestCheckTests {
    static let key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

    @Test(arguments: [
        ("no key", "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n", "400", "exactly one Sec-WebSocket-Key"),
        ("two keys", "Connection: Upgrade\r\n\(key)\(key)Sec-WebSocket-Version: 13\r\n", "400", "exactly one Sec-WebSocket-Key"),
        ("version 8", "Connection: Upgrade\r\n\(key)Sec-WebSocket-Version: 8\r\n", "426", "version 13"),
        ("no version", "Connection: Upgrade\r\n\(key)", "426", "version 13"),
        ("no Connection: Upgrade", "Connection: keep-alive\r\n\(key)Sec-WebSocket-Version: 13\r\n", "400", "Connection: Upgrade"),
    ])
    func aBrokenWebSocketUpgradeIsAnsweredAndClosed(_ name: String, _ headers: String, _ status: String, _ says: String) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        try await socket.send("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\(headers)\r\n")
        let answer = try await socket.receive(until: "\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(name): \(answer.prefix(80))")
        #expect(answer.contains(says), "\(name)")
        if status == "426" { #expect(answer.contains("Sec-WebSocket-Version: 13"), "\(name)") }
        let rest = try await socket.receiveToEnd().text
        #expect(!rest.contains("HTTP/1.1"), "\(name): one answer, then the socket closed")
    }

    @Test func anUpgradeToAnotherProtocolIsServedAsPlainHTTP() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        try await socket.send(
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
        )
        let answer = try await socket.receive(until: "\r\n\r\nok")
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(80))")
        // NIO's decoder parses nothing after a request that asked to upgrade: the server closes the socket after it
        // (well before the socket's own 10 s read timeout would end the read).
        let (rest, closedByServer) = try await socket.receiveToEnd()
        #expect(closedByServer, "closed by the server, not timed out")
        #expect(!rest.contains("HTTP/1.1"))
    }

    static func head(_ method: String, _ uri: String, _ headers: [(String, String)]) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: uri, headers: HTTPHeaders(headers))
    }

    @Test func theVerdictLeavesAGoodUpgradeAndPlainRequestsAlone() {
        var good = Self.head(
            "GET", "/ws",
            [("Upgrade", "websocket"), ("Connection", "keep-alive, Upgrade"), ("Sec-WebSocket-Key", "k"), ("Sec-WebSocket-Version", "13")])
        guard case .pass = UpgradeRequestCheck.verdict(good) else {
            Issue.record("a good upgrade passes")
            return
        }
        good = Self.head("GET", "/", [("Connection", "keep-alive")])
        guard case .pass = UpgradeRequestCheck.verdict(good) else {
            Issue.record("a plain request passes")
            return
        }
        let h2c = Self.head("GET", "/", [("Upgrade", "h2c"), ("Connection", "Upgrade, HTTP2-Settings, keep-alive")])
        guard case .downgrade(let plain) = UpgradeRequestCheck.verdict(h2c) else {
            Issue.record("h2c is downgraded")
            return
        }
        #expect(plain.headers["Upgrade"].isEmpty)
        #expect(plain.headers["Connection"] == ["close"])
    }
}
