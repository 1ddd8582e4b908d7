/// The one table of resilience constants. Names and values are the seeds' (`000` §1, `001`, `004`);
/// the rows marked "Duet" are values the seeds describe without naming. Nothing else in the engine
/// hard-codes a delay, and the browser client's copy is checked against `table`.
public enum ResilienceConstants {
    // Signaling
    public static let RECONNECT_BACKOFF_BASE_MS: Int64 = 500
    public static let RECONNECT_BACKOFF_CAP_MS: Int64 = 5_000
    public static let CONNECT_TIMEOUT_MS: Int64 = 2_000
    public static let PING_INTERVAL_MS: Int64 = 12_000
    public static let PONG_MISS_THRESHOLD = 2
    public static let WS_FALLBACK_CONSECUTIVE_FAILURES = 3
    /// Duet (issue 53): connects through a drain's named node (`draining {via}`) that fail in a row before the client
    /// goes by the room alone — not one: a single refused or slow connect (a reconnect storm, a proxy's limit) would
    /// send one client of the room elsewhere while the other reaches the named node, and the room would move twice.
    public static let VIA_FAILED_CONNECTS_TO_FORGET = 2
    // Join
    public static let JOIN_PUSH_ENDPOINT_WAIT_MS: Int64 = 250
    public static let JOIN_CONNECT_KICKSTART_MS: Int64 = 1_200
    public static let JOIN_RECOVERY_MS: Int64 = 4_000
    public static let JOIN_HARD_TIMEOUT_MS: Int64 = 15_000
    // Peer connection
    public static let OFFER_TIMEOUT_MS: Int64 = 8_000
    public static let ICE_RESTART_COOLDOWN_MS: Int64 = 10_000
    public static let NON_HOST_FALLBACK_DELAY_MS: Int64 = 4_000
    public static let NON_HOST_FALLBACK_MAX_ATTEMPTS = 2
    public static let ICE_CANDIDATE_BUFFER_MAX = 50
    /// Duet: seed 000 scenario 2, "Wait 2s (transient recovery window)".
    public static let ICE_DISCONNECTED_RESTART_DELAY_MS: Int64 = 2_000
    /// Duet (issue 32): while ICE is connected the inbound media counters are read this often…
    public static let MEDIA_SAMPLE_INTERVAL_MS: Int64 = 1_000
    /// …and media that did not grow for this long is a stall (`MediaWatchdogMachine`): longer than a burst of loss,
    /// and longer than Chromium's own consent check takes to say `disconnected` (about 2.5 s), so that an outage ICE
    /// sees goes through the seeds' transient window and the host's restart; the watchdog speaks only where ICE
    /// cannot (a black hole under working STUN, Firefox's slower consent check, libnice without one).
    public static let MEDIA_STALL_TIMEOUT_MS: Int64 = 5_000
    /// Duet (issue 51): stall restarts made with ICE up and answered by the peer before the connection itself is
    /// replaced (`NegotiationMachine`): ICE working while nothing arrives says the connection, not the path, is broken
    /// (a Firefox peer whose restart's ICE stream failed sends nothing on it any more, whatever ICE does next).
    public static let MEDIA_STALL_RESTARTS_BEFORE_RENEWAL = 2
    // TURN
    public static let TURN_FETCH_TIMEOUT_MS: Int64 = 2_000
    public static let TURN_REFRESH_TRIGGER_RATIO = 0.8
    /// Duet: the reconnect token is renewed at this fraction of its TTL (20 min), so that whenever signaling
    /// drops the token still outlives the server's 10 min hold on a suspended seat.
    public static let RECONNECT_TOKEN_REFRESH_RATIO = 0.5
    // Snapshot
    public static let SNAPSHOT_PREPARE_TIMEOUT_MS: Int64 = 2_000
    // Connection status (seed 001)
    /// Duet: seed 001, "10s in recovering without recovery" → retrying.
    public static let CONNECTION_RETRYING_THRESHOLD_MS: Int64 = 10_000
    /// Duet: seed 001, the "Reconnecting…" badge shows only after this long in recovering.
    public static let RECONNECTING_BADGE_DEBOUNCE_MS: Int64 = 800
    /// Duet: pacing of the retrying escalation (ICE restart → offer resend → rejoin → transport fallback),
    /// doubled per step up to the cap.
    public static let RETRY_ESCALATION_BASE_MS: Int64 = 1_000
    public static let RETRY_ESCALATION_CAP_MS: Int64 = 16_000
    // Trickle ICE (seed 004)
    /// Duet: seed 004, end-of-candidates after this long without a new local candidate.
    public static let END_OF_CANDIDATES_TIMEOUT_MS: Int64 = 3_000
    /// Duet: backoff jitter, ± this fraction of the delay.
    public static let BACKOFF_JITTER_RATIO = 0.2
    /// Duet: an SSE stream silent this long is dead (the server comments every PING_INTERVAL_MS).
    public static let SSE_SILENCE_TIMEOUT_MS: Int64 = 30_000
    /// Duet: how long `leave` / `end_room` may take to go out before the transport is closed anyway.
    public static let GOODBYE_FLUSH_TIMEOUT_MS: Int64 = 2_000
    /// Duet: room creation and HTTP leave requests.
    public static let HTTP_REQUEST_TIMEOUT_MS: Int64 = 5_000

    /// Every constant by name, for parity checks with other clients.
    public static let table: [(name: String, value: Double)] = [
        ("RECONNECT_BACKOFF_BASE_MS", Double(RECONNECT_BACKOFF_BASE_MS)),
        ("RECONNECT_BACKOFF_CAP_MS", Double(RECONNECT_BACKOFF_CAP_MS)),
        ("CONNECT_TIMEOUT_MS", Double(CONNECT_TIMEOUT_MS)),
        ("PING_INTERVAL_MS", Double(PING_INTERVAL_MS)),
        ("PONG_MISS_THRESHOLD", Double(PONG_MISS_THRESHOLD)),
        ("WS_FALLBACK_CONSECUTIVE_FAILURES", Double(WS_FALLBACK_CONSECUTIVE_FAILURES)),
        ("VIA_FAILED_CONNECTS_TO_FORGET", Double(VIA_FAILED_CONNECTS_TO_FORGET)),
        ("JOIN_PUSH_ENDPOINT_WAIT_MS", Double(JOIN_PUSH_ENDPOINT_WAIT_MS)),
        ("JOIN_CONNECT_KICKSTART_MS", Double(JOIN_CONNECT_KICKSTART_MS)),
        ("JOIN_RECOVERY_MS", Double(JOIN_RECOVERY_MS)),
        ("JOIN_HARD_TIMEOUT_MS", Double(JOIN_HARD_TIMEOUT_MS)),
        ("OFFER_TIMEOUT_MS", Double(OFFER_TIMEOUT_MS)),
        ("ICE_RESTART_COOLDOWN_MS", Double(ICE_RESTART_COOLDOWN_MS)),
        ("NON_HOST_FALLBACK_DELAY_MS", Double(NON_HOST_FALLBACK_DELAY_MS)),
        ("NON_HOST_FALLBACK_MAX_ATTEMPTS", Double(NON_HOST_FALLBACK_MAX_ATTEMPTS)),
        ("ICE_CANDIDATE_BUFFER_MAX", Double(ICE_CANDIDATE_BUFFER_MAX)),
        ("ICE_DISCONNECTED_RESTART_DELAY_MS", Double(ICE_DISCONNECTED_RESTART_DELAY_MS)),
        ("MEDIA_SAMPLE_INTERVAL_MS", Double(MEDIA_SAMPLE_INTERVAL_MS)),
        ("MEDIA_STALL_TIMEOUT_MS", Double(MEDIA_STALL_TIMEOUT_MS)),
        ("MEDIA_STALL_RESTARTS_BEFORE_RENEWAL", Double(MEDIA_STALL_RESTARTS_BEFORE_RENEWAL)),
        ("TURN_FETCH_TIMEOUT_MS", Double(TURN_FETCH_TIMEOUT_MS)),
        ("TURN_REFRESH_TRIGGER_RATIO", TURN_REFRESH_TRIGGER_RATIO),
        ("RECONNECT_TOKEN_REFRESH_RATIO", RECONNECT_TOKEN_REFRESH_RATIO),
        ("SNAPSHOT_PREPARE_TIMEOUT_MS", Double(SNAPSHOT_PREPARE_TIMEOUT_MS)),
        ("CONNECTION_RETRYING_THRESHOLD_MS", Double(CONNECTION_RETRYING_THRESHOLD_MS)),
        ("RECONNECTING_BADGE_DEBOUNCE_MS", Double(RECONNECTING_BADGE_DEBOUNCE_MS)),
        ("RETRY_ESCALATION_BASE_MS", Double(RETRY_ESCALATION_BASE_MS)),
        ("RETRY_ESCALATION_CAP_MS", Double(RETRY_ESCALATION_CAP_MS)),
        ("END_OF_CANDIDATES_TIMEOUT_MS", Double(END_OF_CANDIDATES_TIMEOUT_MS)),
        ("BACKOFF_JITTER_RATIO", BACKOFF_JITTER_RATIO),
        ("SSE_SILENCE_TIMEOUT_MS", Double(SSE_SILENCE_TIMEOUT_MS)),
        ("GOODBYE_FLUSH_TIMEOUT_MS", Double(GOODBYE_FLUSH_TIMEOUT_MS)),
        ("HTTP_REQUEST_TIMEOUT_MS", Double(HTTP_REQUEST_TIMEOUT_MS)),
    ]
}
