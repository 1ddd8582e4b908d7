import Crypto
import Foundation

/// The HMAC keys of one deployment. Persisted in the data directory so that room ids and tokens
/// issued before a restart stay valid after it (that is what makes `reconnect:"recovered"` possible).
public struct ServerSecrets: Codable, Sendable, Equatable {
    public var roomIdSecret: String
    public var reconnectSecret: String
    public var turnTokenSecret: String

    public static func generate() -> ServerSecrets {
        func key() -> String { Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString() }
        return ServerSecrets(roomIdSecret: key(), reconnectSecret: key(), turnTokenSecret: key())
    }

    /// Reads `secrets.json` from `directory`, creating the directory and the file (mode 0600) on first run.
    public static func loadOrCreate(in directory: String) throws -> ServerSecrets {
        let fileManager = FileManager.default
        let url = URL(fileURLWithPath: directory).appendingPathComponent("secrets.json")
        if let data = fileManager.contents(atPath: url.path) {
            do {
                return try JSONDecoder().decode(ServerSecrets.self, from: data)
            } catch {
                throw ConfigurationError("\(url.path) is not a valid secrets file (\(error)); move it away to generate new secrets")
            }
        }
        try fileManager.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let secrets = generate()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(secrets)
        guard fileManager.createFile(atPath: url.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError("cannot write \(url.path)")
        }
        return secrets
    }

    func key(_ text: String) -> SymmetricKey { SymmetricKey(data: Data(base64Encoded: text) ?? Data(text.utf8)) }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
