import DuetProtocol
import Foundation

/// What to do after one delivery attempt (RFC 8030 §5, §8.4): a pure rule, so that the sender's loop only performs
/// it and the tests can walk every branch without a network.
public struct PushRetryPolicy: Sendable, Equatable {
    /// First wait after a failure; it doubles with every further attempt, up to `maxDelayMs`.
    public var baseDelayMs: Int64 = 1_000
    public var maxDelayMs: Int64 = 16_000
    /// Attempts in all, the first included.
    public var maxAttempts = 6

    public init() {}

    public enum Outcome: Sendable, Equatable {
        /// The push service answered (status, and `Retry-After` in milliseconds when it said one).
        case answered(status: Int, retryAfterMs: Int64?)
        /// No answer: connection refused or reset, TLS failure, timeout.
        case transportFailure(String)
    }

    public enum Decision: Sendable, Equatable {
        case delivered
        /// 404 or 410: the subscription is gone for good (RFC 8030 §7.3); forget it.
        case removeSubscription
        case retry(afterMs: Int64)
        case giveUp(String)
    }

    /// - Parameters:
    ///   - attempt: the attempt that just ended, 1 for the first.
    ///   - deadlineMs: when the message stops being worth delivering (its TTL: a ring that is over).
    public func decide(_ outcome: Outcome, attempt: Int, nowMs: Int64, deadlineMs: Int64) -> Decision {
        let reason: String
        var retryAfterMs: Int64?
        switch outcome {
        case .answered(let status, let retryAfter):
            switch status {
            case 200..<300: return .delivered
            case 404, 410: return .removeSubscription
            case 429, 500..<600:
                reason = "HTTP \(status)"
                retryAfterMs = retryAfter
            default:
                // 400 (bad request), 401/403 (VAPID refused), 413 (too large): the same request fails the same way.
                return .giveUp("HTTP \(status)")
            }
        case .transportFailure(let error):
            reason = error
        }
        guard attempt < maxAttempts else { return .giveUp("\(reason) after \(attempt) attempts") }
        let backoff = min(maxDelayMs, baseDelayMs << min(attempt - 1, 20))
        // The service's Retry-After wins when it asks for longer (RFC 8030 §8.4); a shorter one is not a reason to
        // hammer it sooner than the backoff.
        let delay = max(backoff, retryAfterMs ?? 0)
        // Only while the message can still matter: a retry that would land after the deadline is no use.
        guard nowMs + delay < deadlineMs else { return .giveUp("\(reason); no time left before the message expires") }
        return .retry(afterMs: delay)
    }

    /// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3), in milliseconds from `nowMs`.
    public static func retryAfterMs(_ header: String?, nowMs: Int64) -> Int64? {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return nil }
        if let seconds = Int64(header), seconds >= 0 { return min(seconds, 86_400) * 1000 }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: header) else { return nil }
        return max(0, Int64(date.timeIntervalSince1970 * 1000) - nowMs)
    }
}
