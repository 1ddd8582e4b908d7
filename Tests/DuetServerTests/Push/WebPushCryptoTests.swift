import Crypto
import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

@testable import DuetServer

/// Web Push crypto checked against implementations that are not Duet's: bodies made by Python's http_ece
/// (Tests/e2e/push/make_vectors.py) reproduced byte for byte, and VAPID headers verified by py_vapid.
@Suite struct WebPushCryptoTests {
    struct Vectors: Decodable {
        struct Case: Decodable {
            var plaintext, receiverPublicKey, receiverPrivateKey, auth, senderPrivateKey, salt, body: String
        }
        var cases: [Case]
    }

    static func vectors() throws -> Vectors {
        try JSONDecoder().decode(
            Vectors.self, from: Data(contentsOf: URL(fileURLWithPath: packageRoot + "/Tests/fixtures/push/aes128gcm.json")))
    }

    func bytes(_ text: String) throws -> [UInt8] { try #require(Base64URL.decode(text)) }

    @Test func encryptionReproducesHttpEceBodies() throws {
        let vectors = try Self.vectors()
        #expect(vectors.cases.count >= 4)
        for vector in vectors.cases {
            let body = try WebPushEncryption.encrypt(
                try bytes(vector.plaintext), p256dh: try bytes(vector.receiverPublicKey), auth: try bytes(vector.auth),
                senderKey: try P256.KeyAgreement.PrivateKey(rawRepresentation: try bytes(vector.senderPrivateKey)),
                salt: try bytes(vector.salt))
            let size = try bytes(vector.plaintext).count
            #expect(Base64URL.encode(body) == vector.body, "plaintext of \(size) bytes")
        }
    }

    @Test func freshEncryptionsDifferAndRefuseBadInput() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let p256dh = Array(receiver.publicKey.x963Representation)
        let auth = [UInt8](repeating: 7, count: 16)
        let one = try WebPushEncryption.encrypt(Array("hello".utf8), p256dh: p256dh, auth: auth)
        let two = try WebPushEncryption.encrypt(Array("hello".utf8), p256dh: p256dh, auth: auth)
        #expect(one != two)  // a fresh salt and sender key every time
        #expect(one.count == 86 + 5 + 1 + 16)
        #expect(throws: WebPushEncryption.Failure.self) {
            try WebPushEncryption.encrypt([UInt8](repeating: 0, count: WebPushEncryption.maxPlaintextBytes + 1), p256dh: p256dh, auth: auth)
        }
        #expect(throws: WebPushEncryption.Failure.self) { try WebPushEncryption.encrypt([1], p256dh: p256dh, auth: [1, 2, 3]) }
        #expect(throws: WebPushEncryption.Failure.self) {
            try WebPushEncryption.encrypt([1], p256dh: [4] + [UInt8](repeating: 1, count: 64), auth: auth)
        }
        // The largest payload still makes a body push services must accept (RFC 8030 §7.2: 4096 bytes).
        #expect(
            try WebPushEncryption.encrypt([UInt8](repeating: 0, count: WebPushEncryption.maxPlaintextBytes), p256dh: p256dh, auth: auth)
                .count == 4096)
    }

    @Test func vapidHeadersVerifyWithPyVapid() async throws {
        let key = VAPIDKey()
        let now = Int64(Date().timeIntervalSince1970)
        for audience in ["https://127.0.0.1:8443", "https://fcm.googleapis.com"] {
            let header = try key.authorization(audience: audience, subject: "mailto:ops@example.org", nowSeconds: now)
            #expect(header.hasSuffix(",k=" + key.publicKeyBase64URL))
            let result = try await runCommand(["python3", packageRoot + "/Tests/e2e/push/vapid_check.py", header, audience])
            #expect(result.status == 0, "py_vapid: \(result.stdout) \(result.stderr)")
            let claims = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let exp = (claims?["claims"] as? [String: Any])?["exp"] as? Int64 ?? 0
            #expect(exp > now && exp <= now + 24 * 3600)
        }
        // A header signed by another key, with this key's k=, fails the independent check: it does check.
        let forged = try VAPIDKey().authorization(audience: "https://a.example", subject: "mailto:x@y", nowSeconds: now)
            .replacingOccurrences(of: #",k=.*$"#, with: ",k=" + key.publicKeyBase64URL, options: .regularExpression)
        #expect(try await runCommand(["python3", packageRoot + "/Tests/e2e/push/vapid_check.py", forged, "https://a.example"]).status != 0)
    }

    @Test func vapidKeyIsKeptAcrossRestartsAndRefusesGarbage() throws {
        let directory = TestServer.temporaryDirectory()
        let first = try VAPIDKey.loadOrCreate(in: directory)
        let again = try VAPIDKey.loadOrCreate(in: directory)
        #expect(first.publicKeyBase64URL == again.publicKeyBase64URL)
        #expect(Base64URL.decode(first.publicKeyBase64URL)?.count == 65)
        let path = directory + "/vapid.json"
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        try Data(#"{"privateKey":"short"}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ConfigurationError.self) { try VAPIDKey.loadOrCreate(in: directory) }
    }
}
