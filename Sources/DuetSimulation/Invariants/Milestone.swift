/// A slow clock a run reached. Faults of up to 30 minutes exist so that these happen; the sweep counts them
/// and its test requires each somewhere, so a schedule change that stops reaching one cannot go unnoticed.
public enum Milestone: String, Sendable, CaseIterable, Codable {
    /// A suspended seat was evicted after the server's hold (10 min).
    case eviction
    /// A rejoin was refused because its reconnect token had expired (20 min without a refresh).
    case reconnectTokenExpired
    /// A reconnect token was renewed during the call.
    case reconnectTokenRefreshed
    /// TURN credentials ran out before new ones could be fetched, and were fetched again later.
    case turnExpiredThenRenewed
    /// A seat of an ended room was told `ROOM_ENDED` after the room's tombstone (5 min) had expired.
    case roomEndedAfterTombstone
    /// A side whose inbound media stopped under a connected ICE restarted ICE for it (the media watchdog, issue 32).
    case mediaStallRestarted
    /// A side whose peer connection refused a description or a rollback replaced it (issue 32 point 3).
    case wedgedConnectionReplaced
    /// A side whose inbound media stayed stopped through `MEDIA_STALL_RESTARTS_BEFORE_RENEWAL` stall restarts made with
    /// ICE up and answered replaced its connection (a silent sender, issue 51).
    case stallRenewed
}
