import AsyncHTTPClient
import Foundation

/// What `duet serve` itself records for a join (`duet_join_latency_seconds`, from the message's arrival at the
/// hub to its answer), read from `/metrics`: beside the client-side join latency it tells the server's time
/// apart from queueing on the way in and out.
struct BucketSummary: Codable, Sendable {
    var count: Int
    /// Upper bounds of the buckets holding the 50th and 99th percentiles, in milliseconds.
    var p50AtMostMs: Double
    var p99AtMostMs: Double
}

enum ServerJoinHistogram {
    static func read(from server: ServerUnderTest) async throws -> BucketSummary? {
        guard server.kind == .duet else { return nil }
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: server.baseURL + "metrics"), timeout: .seconds(10))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 22))
        return summary(ofPrometheusText: body, metric: "duet_join_latency_seconds")
    }

    /// Cumulative `_bucket{le="…"}` lines → the smallest bound holding each percentile.
    static func summary(ofPrometheusText text: String, metric: String) -> BucketSummary? {
        var buckets: [(bound: Double, count: Int)] = []
        for line in text.split(separator: "\n") where line.hasPrefix(metric + "_bucket{") {
            guard let start = line.range(of: "le=\""), let end = line[start.upperBound...].firstIndex(of: "\""),
                let count = line.split(separator: " ").last.flatMap({ Double($0) })
            else { continue }
            let label = line[start.upperBound..<end]
            buckets.append((label == "+Inf" ? .infinity : Double(label) ?? .infinity, Int(count)))
        }
        buckets.sort { $0.bound < $1.bound }
        guard let total = buckets.last?.count, total > 0 else { return nil }
        func bound(_ percentile: Double) -> Double {
            let rank = Int((Double(total) * percentile / 100).rounded(.up))
            return (buckets.first { $0.count >= rank }?.bound ?? .infinity) * 1_000
        }
        return BucketSummary(count: total, p50AtMostMs: bound(50), p99AtMostMs: bound(99))
    }
}
