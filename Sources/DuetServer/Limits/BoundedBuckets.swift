/// Token buckets by key (client address, seat) in bounded memory, as a value (time comes in).
///
/// Two generations: lookups hit `current`, then `previous` (and move the bucket to `current`); when `current` is full
/// it becomes `previous` and the old `previous` is dropped. So memory is at most twice `generationSize` buckets, and a
/// flood of new keys (100,000 spoofed IPv6 addresses) only forgets keys that were not seen for a whole generation —
/// it never wipes every bucket at once, so an active abuser keeps its empty bucket while the spray goes on.
public struct BoundedBuckets: Sendable {
    public let rule: IPRateLimiter.Rule
    public let generationSize: Int
    private var current: [String: TokenBucket] = [:]
    private var previous: [String: TokenBucket] = [:]

    public init(rule: IPRateLimiter.Rule, generationSize: Int) {
        self.rule = rule
        self.generationSize = max(1, generationSize)
    }

    public var count: Int { current.count + previous.count }

    public mutating func take(_ key: String, nowMs: Int64) -> Bool {
        var bucket =
            current[key] ?? previous.removeValue(forKey: key) ?? TokenBucket(capacity: rule.capacity, refillPerSecond: rule.refillPerSecond)
        let allowed = bucket.take(nowMs: nowMs)
        if current[key] == nil, current.count >= generationSize {
            previous = current
            current = [:]
        }
        current[key] = bucket
        return allowed
    }
}
