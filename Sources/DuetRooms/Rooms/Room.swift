import DuetProtocol

/// A connection to the server: one WebSocket, or one SSE stream (whose POSTs find it by sid).
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let raw: UInt64
    public init(_ raw: UInt64) { self.raw = raw }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.raw < rhs.raw }
    public var description: String { "conn-\(raw)" }
}

public enum TransportKind: String, Sendable, CaseIterable {
    case ws, sse
}

struct Participant: Sendable, Equatable {
    var cid: String
    var joinedAt: Int64
    /// Nil while suspended: the seat is kept, nothing is delivered.
    var connection: ConnectionID?
    var suspendedAt: Int64?
    /// The last `media_state` this participant sent, repeated in `room_state` so a peer that reconnects learns it.
    /// Kept in memory only: after a server restart every client says it again when it rejoins.
    var media: MediaState?
    /// The push endpoint this participant's device said in `join` (its own subscription): a push about this room is
    /// never sent to a device that is in it.
    var pushEndpoint: String?
    /// The device's own id from `join` (issue 31): its rings are never rung back to it.
    var deviceId: String?

    var status: ParticipantConnectionStatus { connection == nil ? .suspended : .connected }
    var info: ParticipantInfo { ParticipantInfo(cid: cid, joinedAt: joinedAt, connectionStatus: status, media: media) }
}

struct Room: Sendable, Equatable {
    var rid: String
    var hostCid: String
    /// In join order; at most `ProtocolLimits.maxParticipants`.
    var participants: [Participant]
    var epoch: Int64
    /// The host the store remembers for a recovered room, until it recovers its own seat (then it hosts again).
    var returningHost: String?
    /// Whether this node's claim on the room has been written (`DurableFact.roomClaimed`); later changes are updates.
    var claimed = false

    func participant(_ cid: String) -> Participant? { participants.first { $0.cid == cid } }
    func index(of cid: String) -> Int? { participants.firstIndex { $0.cid == cid } }
    var isFull: Bool { participants.count >= ProtocolLimits.maxParticipants }

    var state: RoomStatePayload {
        RoomStatePayload(hostCid: hostCid, participants: participants.map(\.info), epoch: epoch)
    }
}

/// Connected and suspended seats over all rooms, updated where a seat changes.
struct SeatCounts: Sendable, Equatable {
    var connected = 0
    var suspendedCount = 0

    mutating func suspended() {
        connected -= 1
        suspendedCount += 1
    }

    mutating func resumed() {
        connected += 1
        suspendedCount -= 1
    }

    mutating func removed(_ participant: Participant) {
        if participant.connection == nil { suspendedCount -= 1 } else { connected -= 1 }
    }
}

/// A room the store told of that is not held here.
struct KnownRoom: Sendable, Equatable {
    var hostCid: String
    var epoch: Int64
    var occupancy: Int
}

struct Tombstone: Sendable, Equatable {
    var endedBy: String
    var reason: String
    var expiresAt: Int64
}

/// What the core remembers about one open connection.
struct ConnectionState: Sendable, Equatable {
    var kind: TransportKind
    var sid: String?
    /// The seat this connection holds.
    var seat: (rid: String, cid: String)? {
        get { seatRid.flatMap { rid in seatCid.map { (rid, $0) } } }
        set {
            seatRid = newValue?.rid
            seatCid = newValue?.cid
        }
    }
    private(set) var seatRid: String?
    private(set) var seatCid: String?
    /// An SSE stream that reused the sid of a seated participant: it must prove that seat with a
    /// reconnect token before anything else is accepted.
    var mustProveCid: String?
    var watchedRooms: Set<String> = []
    /// The `deviceId` of this connection's last `join`, when well-formed: `joined` then carries its member token.
    var joinDevice: String?
    /// When this connection last delivered a message the core accepted (an SSE stream: its sid's last POST).
    var lastHeardMs: Int64

    init(kind: TransportKind, sid: String?, nowMs: Int64) {
        self.kind = kind
        self.sid = sid
        self.lastHeardMs = nowMs
    }
}

/// Small deterministic PRNG so the core stays a pure value (the simulator seeds it).
struct SplitMix64: RandomNumberGenerator, Sendable, Equatable {
    private(set) var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
