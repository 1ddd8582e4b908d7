import Crypto
import DuetProtocol
import Foundation

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188): what lets a push service
/// carry a payload it cannot read. The browser gave two things when it subscribed: its P-256 public key (`p256dh`)
/// and a 16-byte authentication secret (`auth`). Each message gets a fresh sender key pair and a fresh salt.
public enum WebPushEncryption {
    /// The record size written in the header. Push services accept bodies of at least 4096 bytes (RFC 8030 §7.2);
    /// one record of this size holds the whole body.
    static let recordSize: UInt32 = 4096
    /// Header (salt 16, rs 4, idlen 1, keyid 65) and the AEAD tag and padding delimiter of the one record.
    static let overhead = 86 + 16 + 1
    /// The largest plaintext that keeps the body within 4096 bytes.
    public static let maxPlaintextBytes = Int(recordSize) - overhead

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// - Parameters:
    ///   - senderKey, salt: fresh per message; fixed only by tests that reproduce a known body.
    public static func encrypt(
        _ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8],
        senderKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: [UInt8] = Array(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
    ) throws -> [UInt8] {
        guard plaintext.count <= maxPlaintextBytes else {
            throw Failure(description: "a push payload holds at most \(maxPlaintextBytes) bytes (this one has \(plaintext.count))")
        }
        guard auth.count == 16 else { throw Failure(description: "the subscription's auth secret must be 16 bytes") }
        guard salt.count == 16 else { throw Failure(description: "the salt must be 16 bytes") }
        let receiverKey: P256.KeyAgreement.PublicKey
        do {
            receiverKey = try P256.KeyAgreement.PublicKey(x963Representation: p256dh)
        } catch {
            throw Failure(description: "the subscription's p256dh is not an uncompressed P-256 public key")
        }
        let receiverPublic = Array(receiverKey.x963Representation)
        let senderPublic = Array(senderKey.publicKey.x963Representation)
        let shared = try senderKey.sharedSecretFromKeyAgreement(with: receiverKey)

        // RFC 8291 §3.4: IKM = HKDF(salt = auth, IKM = ECDH secret, info = "WebPush: info" ‖ 0 ‖ ua_public ‖ as_public, 32).
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let ikm = shared.withUnsafeBytes { secret in
            HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secret), salt: auth, info: keyInfo, outputByteCount: 32)
        }
        // RFC 8188 §2.2 and §2.3: the content encryption key and the nonce, from the salt.
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        // One record, so it is the last: the delimiter is 2 (RFC 8188 §2), no padding after it. The sequence number
        // is 0, so the nonce is used as derived.
        let sealed = try AES.GCM.seal(
            plaintext + [2], using: cek, nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }))
        var body = salt
        body += withUnsafeBytes(of: recordSize.bigEndian) { Array($0) }
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        body += Array(sealed.ciphertext) + Array(sealed.tag)
        return body
    }
}
