import DuetProtocol
import DuetTestSupport
import Foundation
import NIOCore
import Testing

@testable import DuetServer

/// `duet serve`'s own STUN server and the ICE server list clients are given (issue 16, point 1).
struct STUNServerTests {
    static func bindingRequest(_ id: [UInt8]) -> [UInt8] {
        STUNMessage(type: STUNMessage.MessageType.bindingRequest, transactionID: id).encoded(fingerprint: true)
    }

    @Test func theBuiltInStunServerAnswersWithTheAddressItSawAndIgnoresTheRest() async throws {
        let server = try await TestServer.start { $0.stunPort = 0 }
        defer { Task { await server.stop() } }
        let stunPort = try #require(server.server.stunPort)
        let probe = try UDPProbe()

        // Garbage first, then a real request: only the request is answered (and the socket survived the garbage).
        probe.send(Array("GET / HTTP/1.1\r\n\r\n".utf8), toPort: stunPort)
        probe.send(
            STUNMessage(type: STUNMessage.MessageType.bindingSuccess, transactionID: Array(repeating: 3, count: 12)).encoded(),
            toPort: stunPort)
        let id: [UInt8] = (0..<12).map { _ in UInt8.random(in: 0...255) }
        probe.send(Self.bindingRequest(id), toPort: stunPort)
        let reply = try #require(try await probe.receive(), "no answer to a Binding request")
        let response = try #require(STUNMessage.parse(reply))
        #expect(response.type == STUNMessage.MessageType.bindingSuccess)
        #expect(response.transactionID == id, "the first datagram back answers the request, not the garbage sent before it")
        let mapped = try #require(
            response.attribute(STUNMessage.Attribute.xorMappedAddress).flatMap { STUNBinding.mappedEndpoint($0, transactionID: id) })
        #expect(mapped == STUNBinding.Endpoint(address: [127, 0, 0, 1], port: UInt16(probe.port)))

        let metrics = try await server.http(.GET, "metrics").body
        #expect(metrics.contains(#"duet_stun_requests_total{result="answered"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"duet_stun_requests_total{result="dropped"} 2"#), "the two non-requests were counted as dropped")
    }

    @Test func clientsAreToldTheBuiltInStunAtTheNameTheyUsedPlusTheConfiguredServers() async throws {
        let server = try await TestServer.start {
            $0.stunPort = 0
            $0.stunURIs = ["stun:stun.example.test:3478"]
        }
        defer { Task { await server.stop() } }
        let port = try #require(server.server.stunPort)
        let client = try await TestClient.connect(.ws, to: server)
        defer { Task { await client.close() } }
        let token = try await client.join(try await server.roomId()).payload.turnToken

        func servers(host: String? = nil) async throws -> TurnCredentials {
            let response = try await server.http(.GET, "api/turn-credentials?token=" + token, headers: host.map { [("Host", $0)] } ?? [])
            #expect(response.status == 200, "\(response.body)")
            return try JSONDecoder().decode(TurnCredentials.self, from: Data(response.body.utf8))
        }
        let direct = try await servers()
        #expect(direct.iceServers == [IceServer(urls: ["stun:127.0.0.1:\(port)", "stun:stun.example.test:3478"])])
        #expect(direct.uris.isEmpty && direct.username == nil && direct.password == nil, "no TURN is configured: no credentials")
        #expect(try await servers(host: "duet.example.com:8443").iceServers.first?.urls.first == "stun:duet.example.com:\(port)")
        #expect(try await servers(host: "[::1]:80").iceServers.first?.urls.first == "stun:[::1]:\(port)")
        // A Host header that is no plain name cannot smuggle anything into the URI: the bound address is used.
        for hostile in ["evil.test/x?transport=tcp", "a b", "x:y:z", "[::1", "[zz]"] {
            #expect(try await servers(host: hostile).iceServers.first?.urls.first == "stun:127.0.0.1:\(port)", "Host \(hostile)")
        }
    }

    @Test func stunAndTurnTogetherAndNothingAtAll() async throws {
        let both = try await TestServer.start {
            $0.stunPort = 0
            $0.turnSecret = "s"
            $0.turnURIs = ["turn:127.0.0.1:3478?transport=udp", "turns:turn.example.test:5349?transport=tcp"]
        }
        defer { Task { await both.stop() } }
        let fetched = try await both.joinAndFetchTurnCredentials()
        let list = try #require(fetched.credentials).iceServers
        #expect(list.count == 2)
        #expect(list.first?.urls == ["stun:127.0.0.1:\(try #require(both.server.stunPort))"] && list.first?.username == nil)
        #expect(list.last?.urls == ["turn:127.0.0.1:3478?transport=udp", "turns:turn.example.test:5349?transport=tcp"])
        #expect(list.last?.username != nil && list.last?.credential != nil)

        let none = try await TestServer.start()  // no STUN, no TURN: 503 as before
        defer { Task { await none.stop() } }
        #expect(try await none.joinAndFetchTurnCredentials().status == 503)
    }

    /// Taken the way coturn takes it (SO_REUSEADDR): were the STUN server to set SO_REUSEADDR too, both would bind and
    /// each datagram would go to one of them — this test would then see duet serve start.
    @Test func aStunPortInUseStopsDuetServeWithAClearError() async throws {
        let binary = try #require(ServerProcess.binary, "build the package first (swift build)")
        let taken = try UDPProbe(reuseAddress: true)
        let result = try await runCommand(
            [binary, "serve", "--port", "0", "--stun-port", String(taken.port), "--data-dir", TestServer.temporaryDirectory()],
            timeout: .seconds(10))
        #expect(result.status == 78, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("udp 127.0.0.1:\(taken.port)") && result.stderr.contains("--stun-port 0"), "\(result.stderr)")
        #expect(result.stdout.isEmpty, "no URL is announced for a server that is not running: \(result.stdout)")
    }

    /// `duet serve` without --stun-port on a machine where coturn has 3478: it runs, without its own STUN server.
    @Test func theDefaultPortInUseOnlyTurnsTheBuiltInStunServerOff() async throws {
        let taken = try UDPProbe(reuseAddress: true)
        let server = try await TestServer.start {
            $0.stunPort = taken.port
            $0.stunPortRequired = false
            $0.stunURIs = ["stun:stun.example.test:3478"]
        }
        defer { Task { await server.stop() } }
        #expect(server.server.stunPort == nil)
        let fetched = try await server.joinAndFetchTurnCredentials()
        #expect(
            try #require(fetched.credentials).iceServers == [IceServer(urls: ["stun:stun.example.test:3478"])],
            "no URI for a STUN server that is not running")
    }

    /// A flood from one address is answered up to its bucket (100 at once, 50 a second after), the rest dropped: the
    /// server is no free reflector. Sent in batches of 50 that the server has counted before the next goes (a burst of
    /// hundreds would overflow the socket's receive buffer, and the kernel's drops are not what this tests); the bound
    /// on the answers comes from the rule and the time the flood took, whatever the machine's speed.
    @Test func aFloodFromOneAddressIsCutToItsRate() async throws {
        let server = try await TestServer.start {
            $0.stunPort = 0
            $0.rateLimits = true
        }
        defer { Task { await server.stop() } }
        let port = try #require(server.server.stunPort)
        let probe = try UDPProbe()
        func counts() async throws -> (answered: Int, dropped: Int) {
            let metrics = try await server.http(.GET, "metrics").body
            func count(_ result: String) -> Int {
                metrics.split(separator: "\n").first { $0.hasPrefix(#"duet_stun_requests_total{result="\#(result)"}"#) }
                    .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            }
            return (count("answered"), count("dropped"))
        }
        let started = ContinuousClock.now
        var sent = 0
        for _ in 0..<20 {
            for _ in 0..<50 {
                sent += 1
                probe.send(Self.bindingRequest((0..<12).map { UInt8(truncatingIfNeeded: sent >> ($0 % 2 * 8)) }), toPort: port)
            }
            var seen = 0
            for _ in 0..<200 where seen < sent {
                let now = try await counts()
                seen = now.answered + now.dropped
                if seen < sent { try await Task.sleep(for: .milliseconds(10)) }
            }
            try #require(seen == sent, "the server saw \(seen) of \(sent) datagrams")
        }
        let elapsed = ContinuousClock.now - started
        let (answered, dropped) = try await counts()
        let allowed = 100 + Int((Double(elapsed.components.seconds) + 1) * 50)
        #expect(answered >= 100, "the first 100 are answered at once: \(answered)")
        #expect(answered <= allowed, "answered \(answered) of 1,000 in \(elapsed): the rule allows \(allowed)")
        #expect(dropped == 1_000 - answered && dropped > 0)
    }

    @Test func anIPv4ClientOfADualStackSocketIsToldItsIPv4Address() throws {
        let mapped = try SocketAddress(ipAddress: "::ffff:198.51.100.7", port: 4242)
        #expect(STUNDatagramHandler.endpoint(mapped) == STUNBinding.Endpoint(address: [198, 51, 100, 7], port: 4242))
        let v6 = try SocketAddress(ipAddress: "2001:db8::1", port: 9)
        #expect(STUNDatagramHandler.endpoint(v6)?.address.count == 16)
    }
}
