import Synchronization

/// Per-IP token buckets for the HTTP entry points (`/ws` upgrades, `/sse`, `/api/*`).
public final class IPRateLimiter: Sendable {
    public struct Rule: Sendable {
        public var capacity: Double
        public var refillPerSecond: Double
        public init(capacity: Double, refillPerSecond: Double) {
            self.capacity = capacity
            self.refillPerSecond = refillPerSecond
        }
    }

    private let rule: Rule
    private let enabled: Bool
    private let buckets = Mutex<[String: TokenBucket]>([:])
    private static let maxTrackedAddresses = 100_000

    public init(rule: Rule, enabled: Bool) {
        self.rule = rule
        self.enabled = enabled
    }

    public func allow(_ address: String, nowMs: Int64) -> Bool {
        guard enabled else { return true }
        return buckets.withLock { buckets in
            if buckets.count > Self.maxTrackedAddresses { buckets.removeAll(keepingCapacity: true) }
            var bucket = buckets[address] ?? TokenBucket(capacity: rule.capacity, refillPerSecond: rule.refillPerSecond)
            let allowed = bucket.take(nowMs: nowMs)
            buckets[address] = bucket
            return allowed
        }
    }
}
