import DuetProtocol
import DuetTestSupport
import DuetTransport
import Foundation
import Testing

/// Nothing a client sends crashes or stalls the server, or touches another room.
@Suite struct BadInputTests {
    @Test("malformed messages get a clear error and the connection keeps working", arguments: SignalingTransportKind.allCases)
    func malformedMessages(kind: SignalingTransportKind) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await TestClient.connect(kind, to: server)
        let cases: [(String, ErrorCode, String)] = [
            ("{not json", .badRequest, "invalid JSON"),
            ("[1,2]", .badRequest, "object"),
            (#"{"type":"ping"}"#, .badRequest, "missing field v"),
            (#"{"v":1}"#, .badRequest, "missing field type"),
            (#"{"v":"1","type":"ping"}"#, .badRequest, "v must be a number"),
            (#"{"v":2,"type":"ping"}"#, .unsupportedVersion, "v=1"),
            (#"{"v":1,"type":7}"#, .badRequest, "type"),
            (#"{"v":1,"type":"join","rid":42}"#, .badRequest, "rid must be a string"),
            (#"{"v":1,"type":"ping","payload":"x"}"#, .badRequest, "payload must be an object"),
        ]
        for (text, code, hint) in cases {
            try await client.sendRaw(text)
            let error = try await client.expectError(code)
            #expect(error.message.contains(hint), "\(text) → \(error.message)")
        }
        // A join with fields of the wrong type names the field.
        let rid = try await server.roomId()
        try await client.sendRaw(#"{"v":1,"type":"join","rid":"\#(rid)","payload":{"reconnectCid":5}}"#)
        let typed = try await client.expectError(.badRequest)
        #expect(typed.message.contains("reconnectCid"))

        // Unknown types are ignored, not fatal.
        try await client.sendRaw(#"{"v":1,"type":"future-feature","payload":{"a":1}}"#)
        try await client.expectNo(.error)
        try await client.send(.ping, payload: ["ts": 7])
        #expect(try await client.expect(.pong).payload["ts"] == 7)

        // Relays with a wrong shape are refused before they reach anyone.
        _ = try await client.join(rid)
        try await client.send(.offer, rid: rid, payload: ["sdp": 5])
        #expect(try await client.expectError(.badRequest).message.contains("sdp"))
        try await client.send(.ice, rid: rid, payload: [:])
        #expect(try await client.expectError(.badRequest).message.contains("candidate"))
        await client.close()
    }

    @Test func oversizeWebSocketMessageGetsMessageTooLargeThenClose1009() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await TestClient.connect(.ws, to: server)
        let big = #"{"v":1,"type":"ping","payload":{"pad":""# + String(repeating: "x", count: 70 * 1024) + #""}}"#
        try await client.sendRaw(big)
        let error = try await client.expectError(.messageTooLarge)
        #expect(error.message.contains("65536"))
        #expect(try await client.expectClosed() == .byServer(code: 1009, reason: "message too large"))
    }

    @Test func oversizeSSEPostGets413AndStreamSurvives() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await TestClient.connect(.sse, to: server)
        let big = #"{"v":1,"type":"ping","payload":{"pad":""# + String(repeating: "x", count: 70 * 1024) + #""}}"#
        await #expect(throws: SignalingSendError.rejected(status: 413)) { try await client.sendRaw(big) }
        try await client.send(.ping, payload: ["ts": 1])
        _ = try await client.expect(.pong)
        await client.close()
    }

    @Test func floodIsRateLimitedThenClosedWhileAnotherRoomKeepsRelaying() async throws {
        // A slow refill, so the flood is refused however slowly a loaded machine sends or reads it.
        let server = try await TestServer.start {
            $0.rateLimits = true
            $0.rateRules.messages = .init(capacity: 100, refillPerSecond: 0.01)
        }
        defer { Task { await server.stop() } }
        // A healthy call in another room.
        let rid = try await server.roomId()
        let host = try await TestClient.connect(.ws, to: server)
        let guest = try await TestClient.connect(.ws, to: server)
        _ = try await host.join(rid)
        _ = try await guest.join(rid)

        let flooder = try await TestClient.connect(.ws, to: server)
        for index in 0..<400 {
            try await flooder.sendRaw(#"{"v":1,"type":"ping","payload":{"ts":\#(index)}}"#)
        }
        _ = try await flooder.expectError(.rateLimited)
        #expect(try await flooder.expectClosed() == .byServer(code: 1008, reason: "rate limited"))

        for index in 0..<5 {
            try await host.send(
                .ice, rid: rid, payload: ["candidate": ["candidate": .string("c\(index)"), "sdpMid": "0", "sdpMLineIndex": 0]])
        }
        for index in 0..<5 {
            let ice = try await guest.expect(.ice)
            #expect(ice.payload["candidate"]?["candidate"]?.stringValue == "c\(index)")
        }
        await host.close()
        await guest.close()
    }

    @Test func garbageOnOneConnectionDoesNotDisturbAnotherRoom() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(.sse, to: server)
        let guest = try await TestClient.connect(.ws, to: server)
        _ = try await host.join(rid)
        _ = try await guest.join(rid)
        let vandal = try await TestClient.connect(.ws, to: server)
        for text in ["", "null", "{}", #"{"v":1,"type":"offer","payload":{"sdp":"x"}}"#, String(repeating: "[", count: 10_000)] {
            try await vandal.sendRaw(text)
        }
        try await host.send(.offer, rid: rid, payload: ["sdp": "still fine"])
        #expect(try await guest.expect(.offer).payload["sdp"] == "still fine")
        await host.close()
        await guest.close()
        await vandal.close()
    }
}
