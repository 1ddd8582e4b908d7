import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

@testable import DuetServer

/// The real server on an ephemeral port, met by raw sockets: the HTTP rules that are Duet's own since `/sse` is
/// answered by `SSEConnectionHandler` in front of the router — order on a kept-alive connection, the body limit, the
/// client's `Connection: close`, and the headers every response carries.
@Suite struct SSEHTTPRulesTests {
    static func post(_ sid: String, body: String, extra: String = "") -> String {
        "POST /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
    }

    /// The status lines of a raw response stream, in order (a text body ends in a bare newline, so a status line may
    /// follow it on the same line).
    static func statuses(_ text: String) -> [String] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + $0.prefix { $0 != "\r" } }
    }

    /// What the socket says until it has given `count` status lines (or ended: recorded as an issue).
    static func answers(_ count: Int, from socket: RawSocket) async throws -> String {
        var text = ""
        while statuses(text).count < count {
            let chunk = try await socket.receive()
            #expect(!chunk.isEmpty, "the connection ended after \(statuses(text))")
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }

    @Test func answersOnOneConnectionKeepRequestOrderWhenPipelinedBehindTheRouter() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        let ping = #"{"v":1,"type":"ping"}"#
        // A routed request (the router answers it in a task of its own), then two SSE POSTs and another routed one,
        // all in one write: the answers must come back in the order asked.
        try await socket.send(
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + Self.post(SessionIdFormat.random(), body: ping)
                + Self.post("nope", body: ping) + "GET /no-such-page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let text = try await Self.answers(4, from: socket)
        #expect(Self.statuses(text).map { String($0.dropFirst(9).prefix(3)) } == ["200", "410", "400", "404"], "\(text)")
    }

    /// `/sse` takes GET and POST; any other method is answered 405 with `Allow` (a HEAD without a body), and the
    /// connection goes on. `/sse/` is `/sse`, as it was when the router answered it.
    @Test func otherMethodsAre405WithAllowAndSlashSSEIsSSE() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        let sid = SessionIdFormat.random()
        try await socket.send(
            "HEAD /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "PUT /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"
                + Self.post(sid, body: #"{"v":1,"type":"ping"}"#).replacingOccurrences(of: "POST /sse?", with: "POST /sse/?"))
        let text = try await Self.answers(3, from: socket)
        // The POST to /sse/ reaches the SSE endpoint: no stream of that sid, 410 (the router would say 404).
        #expect(Self.statuses(text).map { String($0.dropFirst(9).prefix(3)) } == ["405", "405", "410"], "\(text)")
        let answers = text.components(separatedBy: "HTTP/1.1 ").dropFirst()
        let head = try #require(answers.first)
        #expect(head.lowercased().contains("allow: get, post"), "\(head)")
        #expect(!head.contains("/sse takes GET"), "the answer to HEAD has a body: \(head)")
        #expect(answers.dropFirst().first?.contains("/sse takes GET") == true)
        // And a stream opens at /sse/.
        let stream = try await RawSocket.connect(port: server.port)
        defer { stream.close() }
        try await stream.send("GET /sse/?sid=\(SessionIdFormat.random()) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let opened = try await stream.receive(until: "sse_session")
        #expect(Self.statuses(opened).first?.contains("200") == true && opened.contains("text/event-stream"), "\(opened.prefix(300))")
    }

    @Test func aBodyOverTheLimitIs413AndTheConnectionGoesOn() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        let big = String(repeating: "x", count: ProtocolLimits.maxMessageBytes + 1)
        try await socket.send(Self.post(SessionIdFormat.random(), body: big))
        let first = try await socket.receive(until: "\n\r\n")
        #expect(Self.statuses(first).first?.contains("413") == true, "\(first.prefix(200))")
        #expect(first.contains("messages are limited to \(ProtocolLimits.maxMessageBytes) bytes"))
        // At the limit exactly it is read and handed on (no stream: 410), on the same connection.
        try await socket.send(
            Self.post(SessionIdFormat.random(), body: String(repeating: " ", count: ProtocolLimits.maxMessageBytes - 2) + "{}"))
        let second = try await socket.receive(until: "\n\r\n")
        #expect(Self.statuses(second).first?.contains("410") == true, "\(second.prefix(200))")
    }

    @Test func aClientAskingToCloseIsAnsweredThenClosed() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        try await socket.send(Self.post(SessionIdFormat.random(), body: "{}", extra: "Connection: close\r\n"))
        let answer = try await socket.receive(until: "\n\r\n")
        #expect(Self.statuses(answer).first?.contains("410") == true)
        #expect(answer.lowercased().contains("connection: close"))
        #expect(try await socket.receive().isEmpty, "the server closed the connection after its answer")
    }

    @Test func theStreamAndThePostAnswersCarryTheServersHeaders() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let sid = SessionIdFormat.random()
        let stream = try await RawSocket.connect(port: server.port)
        defer { stream.close() }
        try await stream.send("GET /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        let opening = try await stream.receive(until: "sse_session")
        let poster = try await RawSocket.connect(port: server.port)
        defer { poster.close() }
        try await poster.send(Self.post(sid, body: "{}"))
        let answer = try await poster.receive(until: "\n\r\n")
        for (name, head) in [("stream", opening), ("POST", answer)] {
            let lower = head.lowercased()
            #expect(lower.contains("x-content-type-options: nosniff"), "\(name)")
            #expect(lower.contains("referrer-policy: no-referrer"), "\(name)")
            #expect(lower.contains("content-security-policy: default-src 'self'"), "\(name)")
            #expect(lower.contains("server: duet"), "\(name)")
            #expect(lower.contains("date: "), "\(name)")
        }
        #expect(opening.lowercased().contains("content-type: text/event-stream"))
        // Without this stream's post token the POST did nothing.
        #expect(Self.statuses(answer).first?.contains("401") == true)
    }

    @Test func aRequestBehindAnOpenStreamWaitsForItsEnd() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let sid = SessionIdFormat.random()
        let stream = try await RawSocket.connect(port: server.port)
        defer { stream.close() }
        // The stream, and a routed request pipelined behind it on the same connection.
        try await stream.send("GET /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let opening = try await stream.receive(until: "sse_session")
        #expect(Self.statuses(opening).count == 1, "only the stream has been answered: \(opening)")
        // A newer stream of the same (unseated) sid takes over (4003 superseded): the old one ends, then the waiting
        // request is answered.
        let newer = try await RawSocket.connect(port: server.port)
        defer { newer.close() }
        try await newer.send("GET /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _ = try await newer.receive(until: "sse_session")
        let rest = try await stream.receive(until: "\r\n\r\nok")
        #expect(rest.contains(": close 4003 superseded"), "not 4001 replaced: no seat was taken, its client reconnects: \(rest)")
        #expect(rest.contains("\r\n0\r\n\r\n"), "the stream's response ended (last chunk)")
        #expect(Self.statuses(rest).first?.contains("200") == true, "then the request behind it: \(rest)")
    }

    /// Everything until the server closes the socket (or 10 s pass: RawSocket's read timeout), and whether it closed.
    static func readToEnd(_ socket: RawSocket) async throws -> (text: String, closedByServer: Bool) {
        try await socket.receiveToEnd()
    }

    @Test func nothingAfterARequestThatAskedToCloseIsAnswered() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        // Refused at its head (bad sid), with a body still to come, then another request pipelined behind it.
        try await socket.send(
            Self.post("nope", body: "{}", extra: "Connection: close\r\n") + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let (text, closed) = try await Self.readToEnd(socket)
        #expect(Self.statuses(text).map { String($0.dropFirst(9).prefix(3)) } == ["400"], "\(text)")
        #expect(closed, "the server closed the socket after its answer")
    }

    @Test func aStreamThatAskedToCloseEndsItsConnection() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let sid = SessionIdFormat.random()
        let stream = try await RawSocket.connect(port: server.port)
        defer { stream.close() }
        try await stream.send("GET /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let opening = try await stream.receive(until: "sse_session")
        #expect(opening.lowercased().contains("connection: close"))
        let newer = try await RawSocket.connect(port: server.port)
        defer { newer.close() }
        try await newer.send("GET /sse?sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _ = try await newer.receive(until: "sse_session")
        let (rest, closed) = try await Self.readToEnd(stream)
        #expect(rest.contains(": close 4003 superseded"), "\(rest)")
        #expect(closed, "superseded, the stream ended and so did its connection")
    }

    @Test func aHalfClosedClientStillGetsEveryAnswerItWaitsFor() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let socket = try await RawSocket.connect(port: server.port)
        defer { socket.close() }
        try await socket.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + Self.post(SessionIdFormat.random(), body: "{}"))
        socket.shutdownWrite()
        let (text, _) = try await Self.readToEnd(socket)
        #expect(Self.statuses(text).map { String($0.dropFirst(9).prefix(3)) } == ["200", "410"], "\(text)")
    }

    @Test func garbageInsideAStreamClosesItWithoutAnAnswerInTheMiddle() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let stream = try await RawSocket.connect(port: server.port)
        defer { stream.close() }
        try await stream.send("GET /sse?sid=\(SessionIdFormat.random()) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _ = try await stream.receive(until: "sse_session")
        try await stream.send("\u{1}\u{2} not HTTP at all\r\n\r\n")
        let (rest, closed) = try await Self.readToEnd(stream)
        #expect(!rest.contains("HTTP/1.1"), "no response head inside the stream: \(rest)")
        #expect(closed)
        #expect(server.server.hub.snapshot().connections == 0, "the hub forgot the stream")
    }
}
