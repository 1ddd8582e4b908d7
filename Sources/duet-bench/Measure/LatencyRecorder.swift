import DuetLock
import Histogram

/// Latencies in microseconds, from many tasks at once (HdrHistogram, 3 significant digits).
final class LatencyRecorder: Sendable {
    private let histogram = Mutex(Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three))

    func record(nanoseconds: UInt64) {
        let micros = max(1, nanoseconds / 1_000)
        histogram.withLock { _ = $0.record(min(micros, 60_000_000)) }
    }

    var count: UInt64 { histogram.withLock { $0.totalCount } }

    /// p50 / p90 / p99 / max in milliseconds.
    var summary: LatencySummary {
        histogram.withLock { h in
            LatencySummary(
                count: h.totalCount, p50: Double(h.valueAtPercentile(50)) / 1_000, p90: Double(h.valueAtPercentile(90)) / 1_000,
                p99: Double(h.valueAtPercentile(99)) / 1_000, max: Double(h.max) / 1_000)
        }
    }
}

struct LatencySummary: Codable, Sendable {
    var count: UInt64
    var p50: Double
    var p90: Double
    var p99: Double
    var max: Double
}
