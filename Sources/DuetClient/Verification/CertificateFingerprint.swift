import Crypto
import Foundation

/// A DTLS certificate's fingerprint as an SDP writes it (`a=fingerprint:sha-256 AB:CD:…`), normalized like
/// `FingerprintAuth.fingerprints(inSDP:)`: for a WebRTC engine that does not itself hold the handshake's certificate to
/// the remote description (webrtcbin), the runtime compares them (`DuetCall`).
public enum CertificateFingerprint {
    /// `"<algorithm> <HEX:HEX:…>"` of `der` for each algorithm an SDP may name; nil for one we cannot compute.
    public static func fingerprint(of der: [UInt8], algorithm: String) -> String? {
        let digest: [UInt8]
        switch algorithm.lowercased() {
        case "sha-256": digest = Array(SHA256.hash(data: der))
        case "sha-384": digest = Array(SHA384.hash(data: der))
        case "sha-512": digest = Array(SHA512.hash(data: der))
        default: return nil
        }
        let hex = digest.map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return text.count == 1 ? "0" + text : text
        }
        return "\(algorithm.lowercased()) \(hex.joined(separator: ":"))"
    }

    /// Whether `der` is the certificate one of `fingerprints` (normalized, from the remote SDP) names. Fingerprints
    /// of algorithms we cannot compute are not evidence either way; with none we can, it is not a match.
    public static func matches(der: [UInt8], fingerprints: [String]) -> Bool {
        fingerprints.contains { line in
            guard let algorithm = line.split(separator: " ").first else { return false }
            return fingerprint(of: der, algorithm: String(algorithm)) == line
        }
    }

    /// The DER bytes of the first certificate of a PEM text; nil when there is none.
    public static func der(fromPEM pem: String) -> [UInt8]? { ders(fromPEM: pem).first }

    /// The DER bytes of every certificate of a PEM text, in order (the shim gives one per DTLS transport); a block
    /// that is not base64 is skipped.
    public static func ders(fromPEM pem: String) -> [[UInt8]] {
        var found: [[UInt8]] = []
        var rest = pem[...]
        while let begin = rest.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = rest.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<rest.endIndex)
        {
            let body = rest[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
            if let der = Data(base64Encoded: String(body)) { found.append(Array(der)) }
            rest = rest[end.upperBound...]
        }
        return found
    }
}
