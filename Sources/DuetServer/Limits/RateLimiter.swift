import DuetLock

/// Token buckets by key for the HTTP entry points (`/ws` upgrades, `/sse`, `/api/*`: per client address) and for
/// TURN credentials (per seat), in bounded memory (`BoundedBuckets`).
public final class IPRateLimiter: Sendable {
    public struct Rule: Sendable {
        public var capacity: Double
        public var refillPerSecond: Double
        public init(capacity: Double, refillPerSecond: Double) {
            self.capacity = capacity
            self.refillPerSecond = refillPerSecond
        }
    }

    private let enabled: Bool
    private let buckets: Mutex<BoundedBuckets>
    /// Per generation: 2 × 50,000 buckets is a few MiB at most.
    public static let generationSize = 50_000

    public init(rule: Rule, enabled: Bool, generationSize: Int = IPRateLimiter.generationSize) {
        self.enabled = enabled
        self.buckets = Mutex(BoundedBuckets(rule: rule, generationSize: generationSize))
    }

    public func allow(_ key: String, nowMs: Int64) -> Bool {
        guard enabled else { return true }
        return buckets.withLock { $0.take(key, nowMs: nowMs) }
    }

    public var trackedKeys: Int { buckets.withLock { $0.count } }
}
