extension SignalingCore {
    /// How many entries each of the core's tables holds (`duet_table_entries` in /metrics; the soak's leak check):
    /// everything a client can make the server remember. Keys are counted, since a table that keeps an empty entry for
    /// a connection or room that is gone leaks as surely as one that keeps the entry full. The tables of connections,
    /// seats, streams, rooms, listeners and rings empty when those end (`SoakTests` checks that they do); the rest are
    /// bounded by a lifetime or a capacity: tombstones, revoked and ended seats (until their tokens expire), ring
    /// memory and budgets (pruned on tick), rooms the store told of (`knownRooms`).
    public var tableSizes: [String: Int] {
        [
            "rooms": rooms.count,
            "tombstones": tombstones.count,
            "connections": connections.count,
            "sse_streams": sseStreams.count,
            "sse_seats": sseSeats.count,
            "revoked_seats": revokedSeats.count,
            "revoked_seats_order": revokedSeats.orderLength,
            "ended_seats": endedSeats.count,
            "ended_seats_order": endedSeats.orderLength,
            "watched_rooms": watchers.count,
            "listened_rooms": listeners.count,
            "listening": listening.count,
            "core_visitors": visitors.count,
            "rings": rings.count,
            "remote_rings": remoteRings.count,
            "ring_starts": ringStarts.count,
            "ring_outcomes": ringOutcomes.count,
            "join_alert_budgets": joinAlertBudget.count,
            "known_rooms": knownRooms.count,
        ]
    }
}
