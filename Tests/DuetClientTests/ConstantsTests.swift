import DuetClient
import DuetProtocol
import Testing

@Suite struct ConstantsTests {
    @Test func seedValues() {
        let table = Dictionary(uniqueKeysWithValues: ResilienceConstants.table.map { ($0.name, $0.value) })
        // Seed 000 §1, row by row.
        let seed: [String: Double] = [
            "RECONNECT_BACKOFF_BASE_MS": 500, "RECONNECT_BACKOFF_CAP_MS": 5_000, "CONNECT_TIMEOUT_MS": 2_000,
            "PING_INTERVAL_MS": 12_000, "PONG_MISS_THRESHOLD": 2, "WS_FALLBACK_CONSECUTIVE_FAILURES": 3,
            "JOIN_PUSH_ENDPOINT_WAIT_MS": 250, "JOIN_CONNECT_KICKSTART_MS": 1_200, "JOIN_RECOVERY_MS": 4_000,
            "JOIN_HARD_TIMEOUT_MS": 15_000, "OFFER_TIMEOUT_MS": 8_000, "ICE_RESTART_COOLDOWN_MS": 10_000,
            "NON_HOST_FALLBACK_DELAY_MS": 4_000, "NON_HOST_FALLBACK_MAX_ATTEMPTS": 2, "ICE_CANDIDATE_BUFFER_MAX": 50,
            "TURN_FETCH_TIMEOUT_MS": 2_000, "TURN_REFRESH_TRIGGER_RATIO": 0.8, "SNAPSHOT_PREPARE_TIMEOUT_MS": 2_000,
            "CONNECTION_RETRYING_THRESHOLD_MS": 10_000, "RECONNECTING_BADGE_DEBOUNCE_MS": 800,
            "END_OF_CANDIDATES_TIMEOUT_MS": 3_000, "ICE_DISCONNECTED_RESTART_DELAY_MS": 2_000,
        ]
        for (name, value) in seed { #expect(table[name] == value, "\(name)") }
        #expect(table.count == ResilienceConstants.table.count, "names are unique")
    }

    /// The server's SSE liveness rule counts on clients pinging at the engine's interval.
    @Test func serverSSELivenessAssumesTheClientsPingInterval() {
        #expect(SSELiveness.clientPingIntervalMs == ResilienceConstants.PING_INTERVAL_MS)
    }

    @Test func backoffDoublesFromBaseToCap() {
        var backoff = Backoff(baseMs: 500, capMs: 5_000, jitterRatio: 0, seed: 1)
        #expect((0..<7).map { backoff.delay(attempt: $0) } == [500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000])
        #expect(backoff.delay(attempt: 1_000) == 5_000)
    }

    @Test func jitterStaysWithinRatioAndCap() {
        var backoff = Backoff(baseMs: 500, capMs: 5_000, jitterRatio: 0.2, seed: 7)
        var seen = Set<Int64>()
        for _ in 0..<500 {
            let first = backoff.delay(attempt: 0)
            #expect(first >= 400 && first <= 600)
            seen.insert(first)
            #expect(backoff.delay(attempt: 9) <= 5_000)
        }
        #expect(seen.count > 50, "jitter spreads reconnects")
    }
}
