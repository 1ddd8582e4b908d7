import DuetClient

/// How long after the last fault heals both sides must be back in the call with media flowing, derived
/// from the constants (worst case of each step, one after the other):
///
/// 1. a socket that died without a close (half-open, or a network change) is found by the ping:
///    `PING_INTERVAL_MS × (PONG_MISS_THRESHOLD + 1)` = 36 s (SSE's 30 s silence is shorter);
/// 2. the reconnect waits at most `RECONNECT_BACKOFF_CAP_MS` = 5 s;
/// 3. a WebSocket attempt can time out before SSE is tried: 2 × `CONNECT_TIMEOUT_MS` = 4 s;
/// 4. the ICE restart may be held by `ICE_RESTART_COOLDOWN_MS` = 10 s;
/// 5. and one offer may be lost with the dead socket: `OFFER_TIMEOUT_MS` = 8 s;
/// 6. plus one second for round trips, gathering and connectivity checks.
///
/// 36 + 5 + 4 + 10 + 8 + 1 = 64 s.
///
/// A run whose sender went silent for good (`Fault.silentSender`, Firefox's after a failed restart) and is not mended
/// when the last fault heals has more by design: only a new connection mends it, and the engine renews only after
/// `MEDIA_STALL_RESTARTS_BEFORE_RENEWAL` answered restarts in place, a cooldown apart (cheap, and webrtcbin's first
/// restart may not move the path), once the watchdog has seen the stall: `MEDIA_STALL_TIMEOUT_MS` + 2 ×
/// `ICE_RESTART_COOLDOWN_MS` = 25 s more, 89 s (`ms(silentSenderUnmended:)`). A silent sender mended before the heal
/// adds nothing.
public enum RecoveryBound {
    public static let ms: Int64 =
        ResilienceConstants.PING_INTERVAL_MS * Int64(ResilienceConstants.PONG_MISS_THRESHOLD + 1)
        + ResilienceConstants.RECONNECT_BACKOFF_CAP_MS
        + 2 * ResilienceConstants.CONNECT_TIMEOUT_MS
        + ResilienceConstants.ICE_RESTART_COOLDOWN_MS
        + ResilienceConstants.OFFER_TIMEOUT_MS
        + 1_000
}

extension RecoveryBound {
    /// What a lasting stall costs before the renewal that mends a silent sender: the watchdog's wait, then the restarts
    /// in place a cooldown apart.
    public static let stallRenewalMs =
        ResilienceConstants.MEDIA_STALL_TIMEOUT_MS
        + Int64(ResilienceConstants.MEDIA_STALL_RESTARTS_BEFORE_RENEWAL) * ResilienceConstants.ICE_RESTART_COOLDOWN_MS

    /// The bound of a run: `ms`, and `stallRenewalMs` more when a silenced connection is still open at the heal.
    public static func ms(silentSenderUnmended: Bool) -> Int64 { ms + (silentSenderUnmended ? stallRenewalMs : 0) }
}
