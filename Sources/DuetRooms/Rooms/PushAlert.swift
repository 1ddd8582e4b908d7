import DuetProtocol

/// What the room logic asks to be told by Web Push to a room's subscribed devices; the server finds the devices,
/// encrypts and delivers (`WebPushSender`). A value, so the pure core stays free of I/O.
public struct PushAlert: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The seed's join alert: someone took a new seat (with the id of a snapshot they uploaded, if any).
        case joined(snapshotId: String?)
        /// A ring (issue 31): the devices not reached live ring by push until `expiresAtMs`.
        case ring(callId: String, caller: JSONValue?, expiresAtMs: Int64, snapshotId: String? = nil)
        /// The ring is over (`reason` as `ring_ended` says it): the same Topic replaces an undelivered ring.
        case ringEnded(callId: String, reason: String)
    }

    public var rid: String
    /// Who caused it.
    public var cid: String
    public var kind: Kind
    /// Devices that are in the room now: they are not told what they can see.
    public var excludedEndpoints: [String]
    /// Devices (by their id) not to push to: the caller's own, and those that rang live.
    public var excludedDevices: [String]

    public init(rid: String, cid: String, kind: Kind, excludedEndpoints: [String], excludedDevices: [String] = []) {
        self.rid = rid
        self.cid = cid
        self.kind = kind
        self.excludedEndpoints = excludedEndpoints
        self.excludedDevices = excludedDevices
    }

    public static let maxEndpointBytes = 2048

    /// The snapshot a join or ring names.
    public var snapshotId: String? {
        switch kind {
        case .joined(let id): id
        case .ring(_, _, _, let id): id
        case .ringEnded: nil
        }
    }

    /// Snapshot ids are the server's own (`SNAP-` and base64url); anything else in a join is ignored.
    public static func isValidSnapshotId(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                    || byte == 0x5F
            }
    }
}
