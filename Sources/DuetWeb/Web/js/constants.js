// The browser client's copy of `ResilienceConstants` (Sources/DuetClient/ResilienceConstants.swift).
// A Swift test parses the lines below and compares them with `ResilienceConstants.table`: keep exactly
// one `NAME: value,` per line, plain decimal literals. Nothing else in the engine hard-codes a delay.
export const RESILIENCE = Object.freeze({
  // Signaling
  RECONNECT_BACKOFF_BASE_MS: 500,
  RECONNECT_BACKOFF_CAP_MS: 5000,
  CONNECT_TIMEOUT_MS: 2000,
  PING_INTERVAL_MS: 12000,
  PONG_MISS_THRESHOLD: 2,
  WS_FALLBACK_CONSECUTIVE_FAILURES: 3,
  // Duet (issue 53): failed connects in a row through a drain's named node before going by the room alone.
  VIA_FAILED_CONNECTS_TO_FORGET: 2,
  // Join
  JOIN_PUSH_ENDPOINT_WAIT_MS: 250,
  JOIN_CONNECT_KICKSTART_MS: 1200,
  JOIN_RECOVERY_MS: 4000,
  JOIN_HARD_TIMEOUT_MS: 15000,
  // Peer connection
  OFFER_TIMEOUT_MS: 8000,
  ICE_RESTART_COOLDOWN_MS: 10000,
  NON_HOST_FALLBACK_DELAY_MS: 4000,
  NON_HOST_FALLBACK_MAX_ATTEMPTS: 2,
  ICE_CANDIDATE_BUFFER_MAX: 50,
  // Duet: seed 000 scenario 2, "Wait 2s (transient recovery window)".
  ICE_DISCONNECTED_RESTART_DELAY_MS: 2000,
  // Media watchdog (issue 32): inbound counters read this often while ICE is connected; no growth this long is a stall
  MEDIA_SAMPLE_INTERVAL_MS: 1000,
  MEDIA_STALL_TIMEOUT_MS: 5000,
  // Duet: stall restarts made with ICE up and answered before the connection itself is replaced (issue 51).
  MEDIA_STALL_RESTARTS_BEFORE_RENEWAL: 2,
  // TURN
  TURN_FETCH_TIMEOUT_MS: 2000,
  TURN_REFRESH_TRIGGER_RATIO: 0.8,
  // Duet: renewed at this fraction of its TTL (20 min), so the token outlives the server's 10 min seat hold.
  RECONNECT_TOKEN_REFRESH_RATIO: 0.5,
  // Snapshot
  SNAPSHOT_PREPARE_TIMEOUT_MS: 2000,
  // Connection status (seed 001): "10s in recovering without recovery" → retrying.
  CONNECTION_RETRYING_THRESHOLD_MS: 10000,
  // Duet: the "Reconnecting…" badge shows only after this long in recovering.
  RECONNECTING_BADGE_DEBOUNCE_MS: 800,
  // Duet: pacing of the retrying escalation, doubled per step up to the cap.
  RETRY_ESCALATION_BASE_MS: 1000,
  RETRY_ESCALATION_CAP_MS: 16000,
  // Duet: seed 004, end-of-candidates after this long without a new local candidate.
  END_OF_CANDIDATES_TIMEOUT_MS: 3000,
  // Duet: backoff jitter, ± this fraction of the delay.
  BACKOFF_JITTER_RATIO: 0.2,
  // Duet: an SSE stream silent this long is dead (the server comments every PING_INTERVAL_MS).
  SSE_SILENCE_TIMEOUT_MS: 30000,
  // Duet: how long `leave` / `end_room` may take to go out before the transport is closed anyway.
  GOODBYE_FLUSH_TIMEOUT_MS: 2000,
  // Duet: room creation and HTTP leave requests.
  HTTP_REQUEST_TIMEOUT_MS: 5000,
});
