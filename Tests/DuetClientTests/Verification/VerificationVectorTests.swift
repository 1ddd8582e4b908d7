import DuetClient
import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

/// Verified calls' building blocks in DuetClient: the link key, the `auth` of an offer or answer, the safety code.
/// The vectors in Tests/fixtures/verification were computed by Python's hmac/hashlib (make_vectors.py); the browser's
/// Tests/web/verification.test.mjs checks the same file.
@Suite struct VerificationVectorTests {
    struct Vectors: Decodable {
        struct Auth: Decodable {
            var name, key, rid, sender, receiver, sdp, messageHex, auth: String
            var fingerprints: [String]
        }
        struct Code: Decodable {
            var rid, digestHex, code: String
            var local, remote: [String]
        }
        struct VerifyFailed: Decodable {
            var key, rid, sender, receiver, messageHex, auth: String
        }
        var auth: [Auth]
        var verifyFailed: VerifyFailed
        var safetyCode: Code
    }

    static func vectors() throws -> Vectors {
        try JSONDecoder().decode(
            Vectors.self, from: Data(contentsOf: URL(fileURLWithPath: packageRoot + "/Tests/fixtures/verification/vectors.json")))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func authVectorsGiveTheFingerprintsTheExactMessageAndTheHMAC() throws {
        let vectors = try Self.vectors()
        #expect(vectors.auth.count == 2)
        for v in vectors.auth {
            let key = try #require(LinkKey(base64url: v.key), "\(v.name)")
            let prints = FingerprintAuth.fingerprints(inSDP: v.sdp)
            #expect(prints == v.fingerprints, "\(v.name)")
            #expect(
                Self.hex(FingerprintAuth.message(rid: v.rid, sender: v.sender, receiver: v.receiver, fingerprints: prints)) == v.messageHex,
                "\(v.name)")
            #expect(FingerprintAuth.auth(key: key, rid: v.rid, sender: v.sender, receiver: v.receiver, sdp: v.sdp) == v.auth, "\(v.name)")
            #expect(FingerprintAuth.verify(auth: v.auth, key: key, rid: v.rid, sender: v.sender, receiver: v.receiver, sdp: v.sdp))
        }
    }

    /// The browser reads the same file (Tests/web/verification.test.mjs): one grammar for `a=fingerprint` lines.
    @Test func fingerprintLinesAreReadAsTheBrowserReadsThem() throws {
        struct Cases: Decodable {
            struct Case: Decodable {
                var lines: [String]
                var expected: [String]
            }
            var cases: [Case]
        }
        let file = try JSONDecoder().decode(
            Cases.self, from: Data(contentsOf: URL(fileURLWithPath: packageRoot + "/Tests/fixtures/verification/fingerprint-lines.json")))
        #expect(file.cases.count >= 7)
        for item in file.cases {
            #expect(FingerprintAuth.fingerprints(inSDP: item.lines.joined(separator: "\r\n")) == item.expected, "\(item.lines)")
        }
    }

    @Test func authSaysNoToASwappedFingerprintAReflectionAnotherRoomOrKeyOrNone() throws {
        let v = try #require(try Self.vectors().auth.first)
        let key = try #require(LinkKey(base64url: v.key))
        func verify(
            auth: String? = nil, key: LinkKey? = nil, rid: String? = nil, sender: String? = nil, receiver: String? = nil,
            sdp: String? = nil, noAuth: Bool = false
        ) -> Bool {
            FingerprintAuth.verify(
                auth: noAuth ? nil : (auth ?? v.auth), key: key ?? LinkKey(base64url: v.key)!, rid: rid ?? v.rid,
                sender: sender ?? v.sender, receiver: receiver ?? v.receiver, sdp: sdp ?? v.sdp)
        }
        let swapped = v.sdp.replacingOccurrences(of: "4A:AD:B9", with: "00:AD:B9").replacingOccurrences(of: "4a:ad:b9", with: "00:ad:b9")
        #expect(!verify(sdp: swapped), "a server that rewrote the fingerprints")
        #expect(!verify(sender: v.receiver, receiver: v.sender), "sent back to its sender")
        #expect(!verify(rid: "another-room"))
        #expect(!verify(key: LinkKey.random()))
        #expect(!verify(noAuth: true), "no auth on a keyed link")
        #expect(!verify(auth: String(v.auth.dropLast())))
        let stripped = v.sdp.components(separatedBy: "\r\n").filter { !$0.hasPrefix("a=fingerprint") }.joined(separator: "\r\n")
        #expect(
            FingerprintAuth.auth(key: key, rid: v.rid, sender: v.sender, receiver: v.receiver, sdp: stripped) == nil, "nothing to vouch for"
        )
        #expect(!verify(sdp: stripped))
        #expect(verify(sdp: v.sdp + "a=extmap:9 urn:x\r\n"), "only the fingerprints are vouched for")
    }

    @Test func linkKeyIsExactly43Base64URLCharactersAnythingElseIsRefused() throws {
        let text = try Self.vectors().auth[0].key
        #expect(LinkKey(base64url: text)?.bytes == Array(1...32))
        let prefix = String(text.prefix(42))
        for bad in ["", prefix, text + "A", prefix + "=", prefix + "+", text.replacingOccurrences(of: "A", with: "/"), prefix + "B"] {
            #expect(LinkKey(base64url: bad) == nil, "\(bad)")
        }
        let fresh = LinkKey.random()
        #expect(fresh.base64url.count == 43 && LinkKey(base64url: fresh.base64url) == fresh)
        #expect(fresh != LinkKey.random())
        #expect(!"\(fresh)".contains(fresh.base64url), "never printed")
    }

    @Test func safetyCodeVectorAndTheSameCodeOnBothEnds() throws {
        let s = try Self.vectors().safetyCode
        #expect(Self.hex(SafetyCode.digest(rid: s.rid, local: s.local, remote: s.remote)) == s.digestHex)
        #expect(SafetyCode.code(rid: s.rid, local: s.local, remote: s.remote) == s.code)
        #expect(SafetyCode.code(rid: s.rid, local: s.remote, remote: s.local) == s.code, "the other end")
        let middle = ["sha-256 AA:BB"]
        #expect(
            SafetyCode.code(rid: s.rid, local: s.local, remote: middle) != SafetyCode.code(rid: s.rid, local: s.remote, remote: middle),
            "someone in the middle: the codes differ")
    }
}
