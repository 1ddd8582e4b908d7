/// TURN credentials: fetched with a 2 s limit (falling back to the configured STUN servers, or none),
/// refreshed at 0.8 × TTL on a timer that keeps running while signaling is down, and applied to the
/// live peer connection each time.
public struct TurnMachine: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        /// From `joined` or `turn-refreshed`.
        case token(String, ttlMs: Int64)
        case fetched(ttlSeconds: Int64)
        case fetchFailed
        case signaling(up: Bool)
        case stop
        case timerFired(TimerID)
    }

    public enum Action: Sendable, Equatable {
        case fetchCredentials(token: String)
        /// Use what was fetched (the runtime holds the servers).
        case applyFetchedServers
        /// Use the configured fallback (STUN or nothing).
        case applyFallbackServers
        case sendTurnRefresh
        case timer(TimerCommand)
    }

    private var token: String?
    private var tokenTTLMs: Int64 = 0
    private var fetching = false
    private var haveCredentials = false
    private var signalingUp = true
    private var stopped = false

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        if stopped, event != .stop { return [] }
        switch event {
        case .token(let value, let ttl):
            token = value
            tokenTTLMs = ttl
            return fetch() + [.timer(.schedule(.turnRefresh, afterMs: refreshDelay(ttl)))]
        case .fetched(let ttlSeconds):
            guard fetching else { return [] }
            fetching = false
            haveCredentials = true
            // Credentials may expire before the token does: refresh for whichever comes first.
            let credentialRefresh = refreshDelay(ttlSeconds * 1000)
            var actions: [Action] = [.timer(.cancel(.turnFetchTimeout)), .applyFetchedServers]
            if credentialRefresh < refreshDelay(tokenTTLMs) {
                actions.append(.timer(.schedule(.turnRefresh, afterMs: credentialRefresh)))
            }
            return actions
        case .fetchFailed, .timerFired(.turnFetchTimeout):
            guard fetching else { return [] }
            fetching = false
            // Keep working credentials if we have them; otherwise run without TURN until the next refresh.
            return [.timer(.cancel(.turnFetchTimeout))] + (haveCredentials ? [] : [.applyFallbackServers])
        case .signaling(let up):
            signalingUp = up
            return []
        case .timerFired(.turnRefresh):
            // Signaling up: get a fresh token. Down: the current token still has 20 % of its life —
            // renew the credentials with it so they do not lapse during the outage.
            if signalingUp { return [.sendTurnRefresh] + [.timer(.schedule(.turnRefresh, afterMs: refreshDelay(tokenTTLMs)))] }
            return fetch() + [.timer(.schedule(.turnRefresh, afterMs: max(1_000, refreshDelay(tokenTTLMs) / 4)))]
        case .timerFired:
            return []
        case .stop:
            stopped = true
            return [.timer(.cancel(.turnRefresh)), .timer(.cancel(.turnFetchTimeout))]
        }
    }

    private mutating func fetch() -> [Action] {
        guard let token else { return [] }
        fetching = true
        return [.fetchCredentials(token: token), .timer(.schedule(.turnFetchTimeout, afterMs: ResilienceConstants.TURN_FETCH_TIMEOUT_MS))]
    }

    private func refreshDelay(_ ttlMs: Int64) -> Int64 {
        Int64(Double(ttlMs) * ResilienceConstants.TURN_REFRESH_TRIGGER_RATIO)
    }
}
