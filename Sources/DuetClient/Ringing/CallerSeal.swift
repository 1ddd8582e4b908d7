import Crypto
import DuetProtocol
import Foundation

/// A ring's `caller`: the caller's name sealed with the call link's key (issue 31), the twin of the browser's
/// `js/ringing/caller-seal.js`. AES-256-GCM under HKDF-SHA-256(link key, no salt, info "duet caller v1"), with
/// `duet-caller|<rid>|<callId>` as additional data: the server relays bytes it can neither read nor forge, and a seal
/// cannot be moved to another ring or room; it says when it was made, and an old one (a replayed ring) is not shown.
/// Both twins open the seals in Tests/fixtures/ringing/caller-seal.json, made
/// by Python's `cryptography`.
public enum CallerSeal {
    public static let maxNameLength = 64

    /// What a device may show of a ring's caller.
    public enum Caller: Sendable, Equatable {
        /// Opened with the link's key: the caller wrote this name.
        case verified(String)
        /// A link without a key: a name nobody vouches for (or none).
        case unverified(String?)
        /// A keyed call whose caller did not open (altered, moved, another key, or a plain name where a seal belongs):
        /// never shown as a name.
        case altered
    }

    public static func clean(_ name: String) -> String {
        let printable = String(String.UnicodeScalarView(name.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        return String(printable.trimmingCharacters(in: .whitespaces).prefix(maxNameLength))
    }

    /// A ring's answer secrets (`RingAnswerCommitments`): sealed inside the caller, their SHA-256 given to the server, so
    /// that only a device with the link's key can answer.
    public struct AnswerSecrets: Sendable, Equatable {
        /// base64url, 16 random bytes each.
        public var accept: String
        public var decline: String

        public init(accept: String, decline: String) {
            self.accept = accept
            self.decline = decline
        }

        public static func random() -> AnswerSecrets {
            let bytes = { Base64URL.encode((0..<16).map { _ in UInt8.random(in: .min ... .max) }) }
            return AnswerSecrets(accept: bytes(), decline: bytes())
        }

        public var commitments: RingAnswerCommitments {
            let hash = { (text: String) in Base64URL.encode(SHA256.hash(data: Base64URL.decode(text) ?? [])) }
            return RingAnswerCommitments(accept: hash(accept), decline: hash(decline))
        }

        public func secret(for answer: RingAnswerPayload.Answer) -> String {
            switch answer {
            case .accept: accept
            case .decline: decline
            }
        }
    }

    public static func seal(
        name: String, rid: String, callId: String, key: LinkKey?, answers: AnswerSecrets? = nil, nowMs: Int64 = Self.nowMs()
    ) throws -> JSONValue {
        let clean = clean(name)
        guard let key else { return ["v": 1, "plain": .string(clean)] }
        var fields: [String: Any] = ["name": clean, "at": nowMs]
        if let answers { fields["answers"] = ["accept": answers.accept, "decline": answers.decline] }
        let body = try JSONSerialization.data(withJSONObject: fields)
        let box = try AES.GCM.seal(body, using: sealingKey(key), nonce: AES.GCM.Nonce(), authenticating: Data(associated(rid, callId).utf8))
        return ["v": 1, "iv": .string(Base64URL.encode(box.nonce)), "ct": .string(Base64URL.encode(box.ciphertext + box.tag))]
    }

    /// `nowMs`: a seal older (or newer) than `RingLimits.callerSealMaxAgeMs` by its own time is a replayed ring.
    public static func open(_ caller: JSONValue?, rid: String, callId: String, key: LinkKey?, nowMs: Int64 = Self.nowMs()) -> Caller {
        opened(caller, rid: rid, callId: callId, key: key, nowMs: nowMs).caller
    }

    /// What `open` says, and the answer secrets the caller sealed (only from a verified caller).
    public static func opened(
        _ caller: JSONValue?, rid: String, callId: String, key: LinkKey?, nowMs: Int64 = Self.nowMs()
    ) -> (caller: Caller, answers: AnswerSecrets?) {
        guard let fields = caller?.objectValue else { return (key == nil ? .unverified(nil) : .altered, nil) }
        if let plain = fields["plain"]?.stringValue {
            guard key == nil else { return (.altered, nil) }
            let name = clean(plain)
            return (.unverified(name.isEmpty ? nil : name), nil)
        }
        guard let key, let iv = fields["iv"]?.stringValue.flatMap(Base64URL.decode), iv.count == 12,
            let sealed = fields["ct"]?.stringValue.flatMap(Base64URL.decode), sealed.count > 16
        else { return (key == nil ? .unverified(nil) : .altered, nil) }
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            let body = try AES.GCM.open(box, using: sealingKey(key), authenticating: Data(associated(rid, callId).utf8))
            guard let opened = try JSONSerialization.jsonObject(with: body) as? [String: Any], let name = opened["name"] as? String,
                let at = (opened["at"] as? NSNumber)?.int64Value, abs(nowMs - at) <= RingLimits.callerSealMaxAgeMs
            else { return (.altered, nil) }
            let clean = clean(name)
            guard !clean.isEmpty else { return (.altered, nil) }
            let answers = (opened["answers"] as? [String: Any]).flatMap { answers -> AnswerSecrets? in
                guard let accept = answers["accept"] as? String, let decline = answers["decline"] as? String else { return nil }
                return AnswerSecrets(accept: accept, decline: decline)
            }
            return (.verified(clean), answers)
        } catch {
            return (.altered, nil)
        }
    }

    static func sealingKey(_ key: LinkKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key.bytes), info: Data("duet caller v1".utf8), outputByteCount: 32)
    }

    static func associated(_ rid: String, _ callId: String) -> String { "duet-caller|\(rid)|\(callId)" }

    public static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
