import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// Reads `secrets.json` from `directory`, creating the directory (0700) and the file (0600) on first run.
    ///
    /// The file appears atomically and is never overwritten: it is written to a fresh temporary file (`O_EXCL`, mode
    /// 0600 from the start, so the keys are never readable by others) and linked into place, which fails if it exists.
    /// Two servers starting at once therefore agree on one set of keys, and nobody reads a half-written file.
    public static func loadOrCreate(in directory: String) throws -> ServerSecrets {
        let path = URL(fileURLWithPath: directory).appendingPathComponent("secrets.json").path
        if let existing = try read(path) { return existing }
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let secrets = generate()
        guard try SecretFile.createOnce(path, contents: try encoder.encode(secrets)) else {
            guard let theirs = try read(path) else { throw ConfigurationError("cannot read \(path), which another server just created") }
            return theirs  // another server created it first: use its keys
        }
        return secrets
    }

    /// The secrets in `path`, nil if there is no such file; a clear error for anything else.
    static func read(_ path: String) throws -> ServerSecrets? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("\(path) exists but cannot be read; check its owner and permissions")
        }
        let secrets: ServerSecrets
        do {
            secrets = try JSONDecoder().decode(ServerSecrets.self, from: data)
        } catch {
            throw ConfigurationError("\(path) is not a valid secrets file (\(error)); move it away to generate new secrets")
        }
        for (name, value) in [
            ("roomIdSecret", secrets.roomIdSecret), ("reconnectSecret", secrets.reconnectSecret),
            ("turnTokenSecret", secrets.turnTokenSecret),
        ] {
            guard let key = Data(base64Encoded: value), key.count >= 32 else {
                throw ConfigurationError("\(path): \(name) must be at least 32 bytes of base64; move the file away to generate new secrets")
            }
        }
        return secrets
    }

    func key(_ text: String) -> SymmetricKey { SymmetricKey(data: Data(base64Encoded: text) ?? Data(text.utf8)) }

    /// A key for a newer purpose, derived from the reconnect secret (HKDF, the purpose as info): no new field in a
    /// secrets file that servers of every age share, and no key used for two purposes.
    func derivedKey(_ purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key(reconnectSecret), info: Data("duet \(purpose)".utf8), outputByteCount: 32)
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A file of secrets that appears atomically and is never overwritten: written to a fresh temporary file (`O_EXCL`,
/// mode 0600 from the start, so the keys are never readable by others) and linked into place, which fails if it
/// exists. Two servers starting at once therefore agree on one file, and nobody reads a half-written one.
enum SecretFile {
    /// False if `path` already existed (the caller reads that one instead).
    static func createOnce(_ path: String, contents data: Data) throws -> Bool {
        let temporary = path + ".new-\(UInt64.random(in: .min ... .max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ConfigurationError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        defer { unlink(temporary) }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == data.count, synced else { throw ConfigurationError("cannot write \(temporary)") }
        if link(temporary, path) != 0 {
            guard errno == EEXIST else { throw ConfigurationError("cannot create \(path): \(String(cString: strerror(errno)))") }
            return false
        }
        return true
    }
}

extension VAPIDKey {
    /// `vapid.json` in the data directory, beside `secrets.json` and made the same way (a file of its own, so that a
    /// server upgraded from before push keeps its secrets file untouched).
    public static func loadOrCreate(in directory: String) throws -> VAPIDKey {
        struct Stored: Codable { var privateKey: String }
        let path = URL(fileURLWithPath: directory).appendingPathComponent("vapid.json").path
        func read() throws -> VAPIDKey? {
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("\(path) exists but cannot be read; check its owner and permissions")
            }
            do {
                return try VAPIDKey(privateKeyBase64URL: JSONDecoder().decode(Stored.self, from: data).privateKey)
            } catch {
                throw ConfigurationError(
                    "\(path) is not a valid VAPID key file (\(error)); moving it away makes a new key, and every device must then subscribe again"
                )
            }
        }
        if let existing = try read() { return existing }
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let key = VAPIDKey()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard try SecretFile.createOnce(path, contents: try encoder.encode(Stored(privateKey: key.privateKeyBase64URL))) else {
            guard let theirs = try read() else { throw ConfigurationError("cannot read \(path), which another server just created") }
            return theirs
        }
        return key
    }
}
