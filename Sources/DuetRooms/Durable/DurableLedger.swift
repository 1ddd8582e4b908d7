/// What a store holds after a sequence of writes, and what it gives back on `load` — as a value. It is the
/// reference the real stores are checked against (the same writes replayed into SQLite, PostgreSQL and this must
/// load the same facts), and the simulator's store, so a simulated restart remembers what `duet serve` remembers.
public struct DurableLedger: Sendable, Equatable {
    private var ended: [String: DurableFact] = [:]
    private var revoked: [String: DurableFact] = [:]
    private var live: [String: DurableFact] = [:]

    public init() {}

    public mutating func write(_ fact: DurableFact) {
        switch fact {
        case .roomEnded(let rid, _, _, _, _, _):
            ended[rid] = fact
            live[rid] = nil
        case .seatRevoked:
            revoked[fact.key] = fact
        case .roomLive(let rid, let host, let epoch, let occupancy), .roomClaimed(let rid, let host, let epoch, let occupancy):
            live[rid] = .roomLive(rid: rid, hostCid: host, epoch: epoch, occupancy: occupancy)
        case .roomGone(let rid):
            live[rid] = nil
        }
    }

    /// Everything still in force at `nowMs`: ended rooms whose tombstone or seats still matter, unexpired
    /// revocations, and the rooms that were live — with occupancy 0, since after a restart none of their seats is
    /// here until its client comes back. In the order the core should learn them: by expiry, then by room id.
    public func load(nowMs: Int64) -> [DurableFact] {
        let endedFacts = ended.values.filter { fact in
            guard case .roomEnded(_, _, _, let tombstoneUntil, _, let seatsUntil) = fact else { return false }
            return max(tombstoneUntil, seatsUntil) > nowMs
        }
        let revokedFacts = revoked.values.filter { fact in
            guard case .seatRevoked(_, _, let until) = fact else { return false }
            return until > nowMs
        }
        let liveFacts = live.values.compactMap { fact -> DurableFact? in
            guard case .roomLive(let rid, let host, let epoch, _) = fact else { return nil }
            return .roomLive(rid: rid, hostCid: host, epoch: epoch, occupancy: 0)
        }
        return Self.canonicalOrder(endedFacts) + Self.canonicalOrder(revokedFacts) + Self.canonicalOrder(liveFacts)
    }

    /// Expiry first (what `ExpiringKeys` keeps in order), then the key: two stores that hold the same facts list
    /// them the same way.
    public static func canonicalOrder(_ facts: [DurableFact]) -> [DurableFact] {
        facts.sorted { lhs, rhs in
            (lhs.expiry, lhs.key) < (rhs.expiry, rhs.key)
        }
    }
}

extension DurableFact {
    /// When the fact stops mattering (live rooms: never, until they are gone).
    var expiry: Int64 {
        switch self {
        case .roomEnded(_, _, _, let tombstoneUntil, _, let seatsUntil): max(tombstoneUntil, seatsUntil)
        case .seatRevoked(_, _, let until): until
        case .roomLive, .roomClaimed, .roomGone: .max
        }
    }
}
