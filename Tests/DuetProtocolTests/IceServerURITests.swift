import DuetProtocol
import Foundation
import Testing

/// What `duet serve` accepts in `--stun-uri` and `--turn-uri`: exactly what a browser's RTCPeerConnection accepts.
struct IceServerURITests {
    @Test func theGrammarBrowsersAccept() {
        for uri in ["stun:stun.example.com", "stun:203.0.113.5:3478", "stuns:stun.example.com:5349", "stun:[2001:db8::1]:3478"] {
            #expect(IceServerURI.problem(uri, kind: .stun) == nil, "\(uri)")
        }
        for uri in [
            "turn:turn.example.com:3478?transport=udp", "turn:turn.example.com:3478?transport=tcp", "turn:10.0.0.1",
            "turns:turn.example.com:5349?transport=tcp", "turns:turn.example.com:443", "turn:[::1]:3478?transport=udp",
        ] {
            #expect(IceServerURI.problem(uri, kind: .turn) == nil, "\(uri)")
        }
    }

    /// Each of these makes `new RTCPeerConnection` throw a SyntaxError in Chromium (seen for the first two).
    @Test func whatABrowserWouldRefuseIsRefusedWithAReason() {
        let stun: [(String, String)] = [
            ("stun:h:3478?transport=udp", "no query"), ("turn:h:3478", "must start with stun:"), ("stun:", "host"),
            ("stun://h:3478", "no //"), ("stun:h:0", "port"), ("stun:h:70000", "port"), ("stun:h:34a", "port"),
            ("stun:h h", "host"), ("stun:[zz]:1", "IPv6"), ("stun:[::1:1", "closing ]"),
        ]
        for (uri, reason) in stun {
            let problem = IceServerURI.problem(uri, kind: .stun)
            #expect(problem?.contains(reason) == true, "\(uri): \(problem ?? "accepted")")
        }
        let turn: [(String, String)] = [
            ("turn:h:3478?transport=sctp", "transport=udp or"), ("turns:h:5349?transport=udp", "only ?transport=tcp"),
            ("stun:h:3478", "must start with turn:"), ("turn:h:3478?transport=udp&x=1", "transport=udp or"), ("turn:@h", "host"),
        ]
        for (uri, reason) in turn {
            let problem = IceServerURI.problem(uri, kind: .turn)
            #expect(problem?.contains(reason) == true, "\(uri): \(problem ?? "accepted")")
        }
    }

    /// The list a client decodes from `/api/turn-credentials`; an older server's TURN-only answer still gives the relay.
    @Test func theIceServerListDecodesFromNewAndOlderServers() throws {
        let new =
            #"{"iceServers":[{"urls":["stun:a:3478"]},{"urls":["turn:b:3478"],"username":"1:duet","credential":"p"}],"uris":["turn:b:3478"],"username":"1:duet","password":"p","ttl":60}"#
        #expect(try JSONDecoder().decode(TurnCredentials.self, from: Data(new.utf8)).iceServers.count == 2)
        let old = #"{"uris":["turn:b:3478"],"username":"1:duet","password":"p","ttl":60}"#
        #expect(
            try JSONDecoder().decode(TurnCredentials.self, from: Data(old.utf8)).iceServers == [
                IceServer(urls: ["turn:b:3478"], username: "1:duet", credential: "p")
            ])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(TurnCredentials.self, from: Data(#"{"ttl":60}"#.utf8)) }
    }
}
