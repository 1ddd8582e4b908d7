/// What must outlive one process, as the core decides it. The core emits facts (`SignalingCore.Output.persist`);
/// the server writes them to its `RoomStateStore` off the relay path, and feeds back what the store knows
/// (`SignalingCore.Input.learned`) — at start, and in a cluster whenever another node wrote something.
///
/// Without them a restarted node forgot which rooms were ended and which seats were left, so an ended room could be
/// recreated and a participant who left could `recover` its seat with an unexpired token.
public enum DurableFact: Sendable, Equatable, Hashable {
    /// The host ended the room: its id answers `ROOM_ENDED` until `tombstoneUntilMs`, and each of `seats` (cids) does
    /// until `seatsUntilMs`, even with an expired token.
    case roomEnded(rid: String, endedBy: String, reason: String, tombstoneUntilMs: Int64, seats: [String], seatsUntilMs: Int64)
    /// The seat was left or given up: a token issued for it must not bring it back before `untilMs`.
    case seatRevoked(rid: String, cid: String, untilMs: Int64)
    /// The room lives (on the node that wrote it) with this host, epoch and number of seats. Written on every
    /// change of membership, so that a node that recovers the room keeps its host and continues its epoch, and so
    /// that watchers on other nodes see its occupancy.
    case roomLive(rid: String, hostCid: String, epoch: Int64, occupancy: Int)
    /// As `roomLive`, written by the node that has just begun to hold the room (its first seat here: a new room,
    /// or a room recovered from another node or from before a restart). Only a claim moves a room's record from
    /// one node to another, and only a claim makes another node give its copy up: an update from a node that
    /// lost the room (`roomLive`) cannot take it back, whatever order the database sees them in.
    case roomClaimed(rid: String, hostCid: String, epoch: Int64, occupancy: Int)
    /// The room emptied (its last seat left or was evicted; not ended): nothing to recover, occupancy 0.
    case roomGone(rid: String)

    /// Facts with the same key replace each other: a writer that fell behind keeps only the newest of each
    /// (bounded by what the core itself holds).
    public var key: String {
        switch self {
        case .roomEnded(let rid, _, _, _, _, _): "ended|" + rid
        case .seatRevoked(let rid, let cid, _): "revoked|" + cid + "|" + rid
        case .roomLive(let rid, _, _, _), .roomClaimed(let rid, _, _, _), .roomGone(let rid): "live|" + rid
        }
    }

    public var rid: String {
        switch self {
        case .roomEnded(let rid, _, _, _, _, _), .seatRevoked(let rid, _, _), .roomLive(let rid, _, _, _), .roomClaimed(let rid, _, _, _),
            .roomGone(let rid):
            rid
        }
    }

    /// The room a claim is for (nil for every other fact).
    public var claimedRid: String? {
        if case .roomClaimed(let rid, _, _, _) = self { return rid }
        return nil
    }

    /// What a queue keeps when `newer` follows this fact with the same key: the newest state, still a claim if this
    /// one was (a claim followed by an update before either was written is still a claim).
    public func merged(with newer: DurableFact) -> DurableFact {
        if case .roomClaimed = self, case .roomLive(let rid, let host, let epoch, let occupancy) = newer {
            return .roomClaimed(rid: rid, hostCid: host, epoch: epoch, occupancy: occupancy)
        }
        return newer
    }
}
