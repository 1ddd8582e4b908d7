/// Every timer of the engine. Machines never sleep: they emit `schedule`/`cancel`, and the runtime
/// (or a test's virtual clock) feeds `fired` back as an event.
public enum TimerID: Hashable, Sendable, CaseIterable {
    // join
    case pushEndpointWait, snapshotPrepare, joinKickstart, joinRecovery, joinHardTimeout
    // signaling link
    case connectTimeout, reconnectBackoff, ping
    // connection status
    case retryingThreshold, retryEscalation
    // negotiation
    case offerTimeout, nonHostFallback, iceRestartDelay, iceRestartCooldown
    // trickle ICE
    case endOfCandidates
    // TURN
    case turnFetchTimeout, turnRefresh
    // session
    case reconnectTokenRefresh
    // media watchdog
    case mediaSample
}

public enum TimerCommand: Hashable, Sendable {
    case schedule(TimerID, afterMs: Int64)
    case cancel(TimerID)
}

/// Exponential backoff with jitter as a value: the random draw comes from a seeded generator so
/// machines stay deterministic (and tests can turn jitter off).
public struct Backoff: Sendable, Equatable {
    public let baseMs: Int64
    public let capMs: Int64
    public let jitterRatio: Double
    private var rng: SplitMix64

    public init(baseMs: Int64, capMs: Int64, jitterRatio: Double, seed: UInt64) {
        self.baseMs = baseMs
        self.capMs = capMs
        self.jitterRatio = jitterRatio
        self.rng = SplitMix64(seed: seed)
    }

    /// Delay before attempt `attempt` (0-based): base·2ⁿ capped, ± jitter, never above the cap.
    public mutating func delay(attempt: Int) -> Int64 {
        let exponential = attempt >= 20 ? capMs : min(capMs, baseMs << Int64(attempt))
        guard jitterRatio > 0 else { return exponential }
        let unit = Double(rng.next() >> 11) / Double(1 << 53)  // [0, 1)
        let factor = 1 - jitterRatio + 2 * jitterRatio * unit
        return min(capMs, max(1, Int64((Double(exponential) * factor).rounded())))
    }
}

public struct SplitMix64: RandomNumberGenerator, Sendable, Equatable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
