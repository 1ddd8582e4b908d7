import Crypto
import DuetLock
import DuetProtocol
import Foundation

/// A join or ring snapshot (issue 31, Serenada's design): a still frame the joiner encrypted for the room's devices.
/// The server holds only what it cannot open — the ciphertext (AES-256-GCM under a random content key), the content key
/// wrapped for each recipient's P-256 key, and the joiner's MAC with the call link's key (`auth`), which the server
/// cannot make, so it cannot put a picture of its own in a snapshot either.
public struct Snapshot: Sendable, Equatable {
    public struct Recipient: Sendable, Equatable {
        public var wrappedKey: [UInt8]
        public var wrappedKeyIv: [UInt8]
    }

    public var id: String
    public var rid: String
    public var ciphertext: [UInt8]
    public var iv: [UInt8]
    public var salt: [UInt8]
    public var ephemeralPublicKey: [UInt8]
    public var mime: String
    /// base64url HMAC by the joiner with the link key; nil from a client without one (Serenada's): such a snapshot
    /// is never shown by Duet's clients.
    public var auth: String?
    /// When the joiner took it (ms), covered by `auth`: an old snapshot replayed into a new call is seen as old.
    public var at: Int64?
    /// `join` or `ring:<callId>`, covered by `auth`: a picture made for one ring is not shown with another.
    public var purpose: String?
    public var recipients: [String: Recipient]
    public var expiresAtMs: Int64

    /// What it counts for against `SnapshotLimits.maxTotalBytes`: at least `minCountedBytes`, so that tiny uploads
    /// cannot make the store hold (and scan) a great many.
    public var bytes: Int { max(SnapshotLimits.minCountedBytes, ciphertext.count + recipients.count * 80 + 256) }

    static func isValidPurpose(_ purpose: String) -> Bool {
        purpose == "join" || (purpose.hasPrefix("ring:") && RingLimits.isValidId(String(purpose.dropFirst(5))))
    }
}

public enum SnapshotLimits {
    /// Serenada's cap on one snapshot's ciphertext.
    public static let maxCiphertextBytes = 300_000
    /// Serenada's lifetime: a join or ring snapshot is news for minutes, not longer.
    public static let lifetimeMs: Int64 = 10 * 60_000
    /// All snapshots held by one node: the oldest make way (memory stays bounded whatever clients upload).
    public static let maxTotalBytes = 48 << 20
    /// Per room: a call makes a few (a join, a ring, a rejoin); more are someone filling memory.
    public static let perRoom = 4
    public static let maxRecipients = PushSubscriptionLimits.perRoom
    public static let minCountedBytes = 8 * 1024
    public static let allowedMimeTypes: Set<String> = ["image/jpeg", "image/webp", "image/png"]
}

/// Snapshots held in memory, bounded by count per room, total bytes (each counted as at least 8 KB: at most 6,144)
/// and lifetime. In memory on purpose: a snapshot
/// lives minutes, and in a cluster the proxy sends its upload, the join that names it and its fetch (`?rid=`) to the
/// node that holds the room.
public final class SnapshotStore: Sendable {
    private struct State {
        var snapshots: [String: Snapshot] = [:]
        /// Oldest first.
        var order: [String] = []
        var bytes = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Stores a snapshot under a new id; returns the id.
    public func put(_ make: (String) -> Snapshot, nowMs: Int64) -> String {
        let id = "SNAP-" + Base64URL.encode((0..<16).map { _ in UInt8.random(in: .min ... .max) })
        let snapshot = make(id)
        state.withLock { state in
            Self.expire(&state, nowMs: nowMs)
            let inRoom = state.order.filter { state.snapshots[$0]?.rid == snapshot.rid }
            for old in inRoom.dropLast(SnapshotLimits.perRoom - 1) { Self.remove(old, from: &state) }
            while state.bytes + snapshot.bytes > SnapshotLimits.maxTotalBytes, let oldest = state.order.first {
                Self.remove(oldest, from: &state)
            }
            state.snapshots[id] = snapshot
            state.order.append(id)
            state.bytes += snapshot.bytes
        }
        return id
    }

    public func get(_ id: String, nowMs: Int64) -> Snapshot? {
        state.withLock { state in
            guard let snapshot = state.snapshots[id] else { return nil }
            guard snapshot.expiresAtMs > nowMs else {
                Self.remove(id, from: &state)
                return nil
            }
            return snapshot
        }
    }

    public var count: Int { state.withLock { $0.snapshots.count } }
    public var totalBytes: Int { state.withLock { $0.bytes } }

    private static func expire(_ state: inout State, nowMs: Int64) {
        while let oldest = state.order.first, let snapshot = state.snapshots[oldest], snapshot.expiresAtMs <= nowMs {
            remove(oldest, from: &state)
        }
    }

    private static func remove(_ id: String, from state: inout State) {
        guard let snapshot = state.snapshots.removeValue(forKey: id) else { return }
        state.order.removeAll { $0 == id }
        state.bytes -= snapshot.bytes
    }
}

extension Snapshot {
    /// The fields a push carries for one recipient, under Serenada's names (base64, as its clients read them), plus
    /// Duet's `snapshotAuth`/`snapshotAt` and where to fetch it (`snapshotUrl`, with `rid` for a cluster's proxy).
    func pushFields(for recipientId: String) -> [String: Any]? {
        guard let recipient = recipients[recipientId] else { return nil }
        var fields: [String: Any] = [
            "snapshotId": id,
            "snapshotIv": Data(iv).base64EncodedString(),
            "snapshotSalt": Data(salt).base64EncodedString(),
            "snapshotEphemeralPubKey": Data(ephemeralPublicKey).base64EncodedString(),
            "snapshotKey": Data(recipient.wrappedKey).base64EncodedString(),
            "snapshotKeyIv": Data(recipient.wrappedKeyIv).base64EncodedString(),
            "snapshotMime": mime,
            "snapshotUrl": Snapshot.url(id: id, rid: rid),
        ]
        if let auth { fields["snapshotAuth"] = auth }
        if let at { fields["snapshotAt"] = at }
        if let purpose { fields["snapshotPurpose"] = purpose }
        return fields
    }

    static func url(id: String, rid: String) -> String { "/api/push/snapshot/\(id)?rid=\(rid)" }

    /// The whole snapshot as JSON, for a page that was rung live (`?format=envelope`): the wrapped keys are of no use
    /// without the recipients' private keys.
    var envelope: [String: Any] {
        var fields: [String: Any] = [
            "id": id, "rid": rid, "mime": mime, "ciphertext": Data(ciphertext).base64EncodedString(),
            "iv": Data(iv).base64EncodedString(), "salt": Data(salt).base64EncodedString(),
            "ephemeralPublicKey": Data(ephemeralPublicKey).base64EncodedString(),
            "recipients": recipients.map { id, recipient in
                [
                    "id": id, "wrappedKey": Data(recipient.wrappedKey).base64EncodedString(),
                    "wrappedKeyIv": Data(recipient.wrappedKeyIv).base64EncodedString(),
                ]
            },
        ]
        if let auth { fields["auth"] = auth }
        if let at { fields["at"] = at }
        if let purpose { fields["purpose"] = purpose }
        return fields
    }

    /// base64 (Serenada) or base64url (Duet), with or without padding.
    static func bytes(_ text: String?) -> [UInt8]? {
        guard let text else { return nil }
        if text.contains("+") || text.contains("/") || text.hasSuffix("=") {
            var padded = text
            while padded.utf8.count % 4 != 0 { padded += "=" }
            return Data(base64Encoded: padded).map { Array($0) }
        }
        return Base64URL.decode(text)
    }
}
