import Crypto
import DuetProtocol

/// Authenticated DTLS fingerprints (docs/protocol.md, "Verified calls"): every `offer` and `answer` on a keyed link
/// carries `auth = base64url(HMAC-SHA256(k, message))`, where `message` binds the room, who sent it to whom and
/// the fingerprints its SDP commits to. The receiver recomputes it over the SDP it got: a server that swapped the
/// fingerprints (to sit in the middle of the DTLS handshake) cannot make a matching `auth` without the link's key.
/// The browser's twin is `js/verification/fingerprint-auth.js`; both check the vectors in Tests/fixtures/verification.
public enum FingerprintAuth {
    static let label = Array("duet-fp-v1".utf8)

    /// Every distinct `a=fingerprint` of `sdp` (session or media level), normalized as `<algorithm lowercased>
    /// <value uppercased>` and sorted by their UTF-8 bytes. One grammar with the browser's: spaces and tabs separate
    /// and surround the two parts, nothing else does; a line without both parts is skipped.
    public static func fingerprints(inSDP sdp: String) -> [String] {
        var found = Set<String>()
        for rawLine in sdp.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : Substring(rawLine)
            guard line.hasPrefix("a=fingerprint:") else { continue }
            let rest = line.dropFirst("a=fingerprint:".count).trimmingSpaces()
            guard let gap = rest.firstIndex(where: { $0 == " " || $0 == "\t" }) else { continue }
            let value = rest[gap...].trimmingSpaces()
            guard !value.isEmpty else { continue }
            found.insert("\(rest[..<gap].lowercased()) \(value.uppercased())")
        }
        return found.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    /// `"duet-fp-v1" ‖ field(rid) ‖ field(sender cid) ‖ field(receiver cid) ‖ u16(count) ‖ field(fingerprint)…`,
    /// a field being its UTF-8 length as a big-endian u16 followed by its bytes: no two inputs share an encoding.
    public static func message(rid: String, sender: String, receiver: String, fingerprints: [String]) -> [UInt8] {
        var bytes = label
        for text in [rid, sender, receiver] { appendField(text, to: &bytes) }
        appendUInt16(fingerprints.count, to: &bytes)
        for fingerprint in fingerprints { appendField(fingerprint, to: &bytes) }
        return bytes
    }

    /// The `auth` of a description, or nil when its SDP has no fingerprint to vouch for.
    public static func auth(key: LinkKey, rid: String, sender: String, receiver: String, sdp: String) -> String? {
        let prints = fingerprints(inSDP: sdp)
        guard !prints.isEmpty else { return nil }
        let mac = HMAC<SHA256>.authenticationCode(
            for: message(rid: rid, sender: sender, receiver: receiver, fingerprints: prints), using: SymmetricKey(data: key.bytes))
        return Base64URL.encode(Array(mac))
    }

    /// Whether `auth` vouches for `sdp` from `sender` to `receiver` in `rid` (compared in constant time). A missing
    /// `auth`, or an SDP without fingerprints, is not vouched for.
    public static func verify(auth: String?, key: LinkKey, rid: String, sender: String, receiver: String, sdp: String) -> Bool {
        guard let auth, let expected = Self.auth(key: key, rid: rid, sender: sender, receiver: receiver, sdp: sdp) else { return false }
        return constantTimeEquals(Array(auth.utf8), Array(expected.utf8))
    }

    static let verifyFailedLabel = Array("duet-vf-v1".utf8)

    /// `"duet-vf-v1" ‖ field(rid) ‖ field(sender cid) ‖ field(receiver cid)`: what a `verify_failed` commits to.
    public static func verifyFailedMessage(rid: String, sender: String, receiver: String) -> [UInt8] {
        var bytes = verifyFailedLabel
        for text in [rid, sender, receiver] { appendField(text, to: &bytes) }
        return bytes
    }

    /// The `auth` of a `verify_failed`: only someone with the link's key can say a call was intercepted, so a server
    /// cannot make a page show the interception screen (it can still drop the call, as it always could).
    public static func verifyFailedAuth(key: LinkKey, rid: String, sender: String, receiver: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: verifyFailedMessage(rid: rid, sender: sender, receiver: receiver), using: SymmetricKey(data: key.bytes))
        return Base64URL.encode(Array(mac))
    }

    public static func verifyVerifyFailed(auth: String?, key: LinkKey, rid: String, sender: String, receiver: String) -> Bool {
        guard let auth else { return false }
        return constantTimeEquals(Array(auth.utf8), Array(verifyFailedAuth(key: key, rid: rid, sender: sender, receiver: receiver).utf8))
    }

    static func appendField(_ text: String, to bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8)
        appendUInt16(utf8.count, to: &bytes)
        bytes += utf8
    }

    /// Lengths and counts over 65,535 are clamped: no SDP or id the server accepts comes near (messages are capped
    /// far below), and clamping keeps the function total instead of trapping on hostile input.
    static func appendUInt16(_ value: Int, to bytes: inout [UInt8]) {
        let clamped = UInt16(clamping: value)
        bytes += [UInt8(clamped >> 8), UInt8(clamped & 0xff)]
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
