import DuetClient
import DuetTestSupport
import Foundation
import Testing

/// The handshake certificate's fingerprint, as `duet call` compares it with the verified description's (webrtcbin does
/// not). The fixture certificate and its fingerprints were made by OpenSSL (`openssl x509 -fingerprint -sha256`…),
/// a third implementation.
@Suite struct CertificateFingerprintTests {
    static func fixture(_ name: String) throws -> String {
        try String(contentsOfFile: packageRoot + "/Tests/fixtures/verification/" + name, encoding: .utf8)
    }

    /// OpenSSL's lines (`sha256 Fingerprint=AB:CD:…`) as an SDP writes them (`sha-256 AB:CD:…`).
    static func openSSLFingerprints() throws -> [String] {
        try fixture("certificate.fingerprints.txt").split(separator: "\n").map { line in
            let parts = line.split(separator: "=", maxSplits: 1)
            let algorithm = parts[0].split(separator: " ")[0].replacingOccurrences(of: "sha", with: "sha-")
            return "\(algorithm) \(parts[1])"
        }
    }

    @Test func thePEMsCertificateHasOpenSSLsFingerprints() throws {
        let der = try #require(CertificateFingerprint.der(fromPEM: try Self.fixture("certificate.pem")))
        let expected = try Self.openSSLFingerprints()
        #expect(expected.count == 3)
        for line in expected {
            let algorithm = String(line.split(separator: " ")[0])
            #expect(CertificateFingerprint.fingerprint(of: der, algorithm: algorithm) == line)
            #expect(CertificateFingerprint.matches(der: der, fingerprints: [line]))
        }
    }

    @Test func anotherCertificateOrAnUnknownAlgorithmIsNoMatch() throws {
        var der = try #require(CertificateFingerprint.der(fromPEM: try Self.fixture("certificate.pem")))
        let expected = try Self.openSSLFingerprints()
        #expect(!CertificateFingerprint.matches(der: der, fingerprints: ["sha-1 00:11:22", "md5 AA"]), "nothing we can compute")
        #expect(!CertificateFingerprint.matches(der: der, fingerprints: []))
        der[der.count / 2] ^= 0x01
        #expect(!CertificateFingerprint.matches(der: der, fingerprints: expected), "one bit of the certificate changed")
        #expect(CertificateFingerprint.der(fromPEM: "no certificate here") == nil)
    }

    /// The GStreamer shim gives every transport's certificate, one PEM after another: each is read, in order, so
    /// `DuetCall` can hold all of them to the description (one wrong certificate among right ones is caught).
    @Test func everyCertificateOfAConcatenatedPEMIsRead() throws {
        let pem = try Self.fixture("certificate.pem")
        let der = try #require(CertificateFingerprint.der(fromPEM: pem))
        var other = der
        other[other.count / 2] ^= 0x01
        let otherPEM =
            "-----BEGIN CERTIFICATE-----\n\(Data(other).base64EncodedString(options: .lineLength64Characters))\n-----END CERTIFICATE-----\n"
        let both = CertificateFingerprint.ders(fromPEM: pem + otherPEM)
        #expect(both == [der, other])
        #expect(CertificateFingerprint.ders(fromPEM: "") == [])
        let expected = try Self.openSSLFingerprints()
        #expect(both.map { CertificateFingerprint.matches(der: $0, fingerprints: expected) } == [true, false])
    }
}
