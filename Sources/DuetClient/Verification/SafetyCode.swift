import Crypto

/// The six digits both people read to each other (SAS-style): derived from the room and both sides' DTLS
/// fingerprints — each side's own certificate and the one in the SDP it received. Nobody in the middle: both see the
/// same two fingerprints and the same code. Someone terminating DTLS in the middle: each side sees a different
/// remote fingerprint, so the codes differ, whatever the link and its key. docs/security.md shows the derivation;
/// the browser's twin is `js/verification/safety-code.js`.
public enum SafetyCode {
    static let label = Array("duet-sas-v1".utf8)

    /// SHA-256(`"duet-sas-v1"` ‖ field(rid) ‖ field(lower side) ‖ field(higher side)), each side its fingerprints
    /// (as `FingerprintAuth.fingerprints`) joined with `,`, the two sides in byte order so both ends agree.
    public static func digest(rid: String, local: [String], remote: [String]) -> [UInt8] {
        let sides = [local.joined(separator: ","), remote.joined(separator: ",")]
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        var bytes = label
        FingerprintAuth.appendField(rid, to: &bytes)
        for side in sides { FingerprintAuth.appendField(side, to: &bytes) }
        return Array(SHA256.hash(data: bytes))
    }

    /// The first 8 bytes of the digest as a big-endian integer, modulo 10⁶, as six digits ("042917"). The modulo's
    /// bias over 2⁶⁴ is below 10⁻¹³.
    public static func code(rid: String, local: [String], remote: [String]) -> String {
        let digest = digest(rid: rid, local: local, remote: remote)
        let number = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 1_000_000
        let digits = String(number)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
