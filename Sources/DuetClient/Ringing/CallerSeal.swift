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

    public static func seal(name: String, rid: String, callId: String, key: LinkKey?, nowMs: Int64 = Self.nowMs()) throws -> JSONValue {
        let clean = clean(name)
        guard let key else { return ["v": 1, "plain": .string(clean)] }
        let body = try JSONSerialization.data(withJSONObject: ["name": clean, "at": nowMs] as [String: Any])
        let box = try AES.GCM.seal(body, using: sealingKey(key), nonce: AES.GCM.Nonce(), authenticating: Data(associated(rid, callId).utf8))
        return ["v": 1, "iv": .string(Base64URL.encode(box.nonce)), "ct": .string(Base64URL.encode(box.ciphertext + box.tag))]
    }

    /// `nowMs`: a seal older (or newer) than `RingLimits.callerSealMaxAgeMs` by its own time is a replayed ring.
    public static func open(_ caller: JSONValue?, rid: String, callId: String, key: LinkKey?, nowMs: Int64 = Self.nowMs()) -> Caller {
        guard let fields = caller?.objectValue else { return key == nil ? .unverified(nil) : .altered }
        if let plain = fields["plain"]?.stringValue {
            guard key == nil else { return .altered }
            let name = clean(plain)
            return .unverified(name.isEmpty ? nil : name)
        }
        guard let key, let iv = fields["iv"]?.stringValue.flatMap(Base64URL.decode), iv.count == 12,
              let sealed = fields["ct"]?.stringValue.flatMap(Base64URL.decode), sealed.count > 16
        else { return key == nil ? .unverified(nil) : .altered }
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            let body = try AES.GCM.open(box, using: sealingKey(key), authenticating: Data(associated(rid, callId).utf8))
            guard let opened = try JSONSerialization.jsonObject(with: body) as? [String: Any], let name = opened["name"] as? String,
                  let at = (opened["at"] as? NSNumber)?.int64Value, abs(nowMs - at) <= RingLimits.callerSealMaxAgeMs
            else { return .altered }
            let clean = clean(name)
            return clean.isEmpty ? .altered : .verified(clean)
        } catch {
            return .altered
        }
    }

    static func sealingKey(_ key: LinkKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key.bytes), info: Data("duet caller v1".utf8), outputByteCount: 32)
    }

    static func associated(_ rid: String, _ callId: String) -> String { "duet-caller|\(rid)|\(callId)" }

    public static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
