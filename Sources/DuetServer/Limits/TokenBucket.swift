/// A token bucket as a value: time comes in, so it is testable without a clock.
public struct TokenBucket: Sendable, Equatable {
    public let capacity: Double
    public let refillPerSecond: Double
    private var tokens: Double
    private var lastMs: Int64?

    public init(capacity: Double, refillPerSecond: Double) {
        self.capacity = capacity
        self.refillPerSecond = refillPerSecond
        self.tokens = capacity
    }

    public mutating func take(nowMs: Int64) -> Bool {
        if let lastMs, nowMs > lastMs {
            tokens = min(capacity, tokens + Double(nowMs - lastMs) / 1000 * refillPerSecond)
        }
        lastMs = max(lastMs ?? nowMs, nowMs)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
