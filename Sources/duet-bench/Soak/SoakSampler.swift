import AsyncHTTPClient
import Foundation

/// One look at the server during the soak: its process (/proc), its own counts (/metrics), its store on disk, and the
/// generator's calls so far.
struct SoakSample: Codable, Sendable {
    /// Seconds since the churn began.
    var t: Double
    var rssKiB: Double
    /// malloc's bytes in use (`duet_heap_in_use_bytes`).
    var heapKiB: Double
    var fds: Double
    var rooms: Double
    /// Seats, connected and suspended.
    var participants: Double
    /// WebSocket and SSE connections.
    var connections: Double
    /// The SQLite database, its WAL and shared memory.
    var storeKiB: Double
    /// Of which the WAL (`rooms.sqlite-wal`): cut back to 4 MiB when it restarts, it shows apart from the rows' pages.
    var walKiB: Double
    var activeCalls: Int
    var calls: Int
    var errors: Int
    /// `duet_table_entries` by table (`SignalingCore.tableSizes`, `SessionState.tableSizes`).
    var tables: [String: Double]

    /// The series whose growth the soak judges (≤ 2 % after the warm-up: benchmarks/soak.py, SoakTests).
    static let judged: [(name: String, value: @Sendable (SoakSample) -> Double)] = [
        ("rssKiB", { $0.rssKiB }), ("heapKiB", { $0.heapKiB }), ("fds", { $0.fds }), ("rooms", { $0.rooms }),
        ("participants", { $0.participants }), ("connections", { $0.connections }), ("storeKiB", { $0.storeKiB }),
    ]

    /// Tables that hold an entry only while its connection, stream, seat, room, listener or ring lives: empty once
    /// every client has gone and the eviction timeout has passed. (The others are bounded by a lifetime or a capacity;
    /// `SignalingCore.tableSizes`.)
    static let emptiedWhenIdle: Set<String> = [
        "rooms", "connections", "sse_streams", "sse_seats", "watched_rooms", "listened_rooms", "listening", "core_visitors",
        "rings", "remote_rings", "outlets", "visitors", "post_tokens", "stream_sids", "cut_offs", "cross_shard",
        "durable_waiting", "connection_slots", "connection_slot_addresses",
    ]

    /// Tables bounded by a lifetime (`SignalingCore.tableSizes`): under steady churn each holds what one lifetime of
    /// churn leaves, then stays there. Judged like the series (as `table:NAME`) once the run is longer than the
    /// lifetime: the soak sets the reconnect token's (revoked seats) and the ended seats' memory (an hour by default)
    /// below its warm-up (`duet-bench soak --token-ttl-seconds`); tombstones live 300 s, join-alert budgets refill in
    /// 90 s, ring memory 5 minutes.
    static let lifetimeBounded = ["revoked_seats", "ended_seats", "tombstones", "join_alert_budgets", "ring_starts", "ring_outcomes"]

    static func growth(of samples: [SoakSample], after warmup: Double) -> [String: SoakGrowth] {
        let steady = samples.filter { $0.t >= warmup }
        let third = steady.count / 3
        guard third >= 1 else { return [:] }
        var growth: [String: SoakGrowth] = [:]
        let tables = lifetimeBounded.map { table in ("table:" + table, { @Sendable (sample: SoakSample) in sample.tables[table] ?? 0 }) }
        for (name, value) in judged.map({ ($0.name, $0.value) }) + tables {
            let first = steady.prefix(third).map(value).reduce(0, +) / Double(third)
            let last = steady.suffix(third).map(value).reduce(0, +) / Double(third)
            growth[name] = SoakGrowth(first: first, last: last, percent: first > 0 ? 100 * (last - first) / first : (last > 0 ? 100 : 0))
        }
        return growth
    }
}

/// Samples the server every few seconds while the churn runs; each sample is also printed (`SAMPLE {json}`), so a run
/// that dies still leaves its series behind.
struct SoakSampler: Sendable {
    let server: ServerUnderTest
    let counts: SoakCounts

    func run(since started: ContinuousClock.Instant, every seconds: Double, until end: ContinuousClock.Instant) async -> [SoakSample] {
        var samples: [SoakSample] = []
        var next = started
        while next <= end {
            try? await Task.sleep(until: next)
            do {
                let sample = try await sample(since: started)
                samples.append(sample)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                if let line = try? encoder.encode(sample) { print("SAMPLE " + String(decoding: line, as: UTF8.self)) }
            } catch {
                counts.error("sample: \(error)")
            }
            next = next + .milliseconds(Int64(seconds * 1_000))
        }
        return samples
    }

    func sample(since started: ContinuousClock.Instant) async throws -> SoakSample {
        let metrics = try await Self.scrape(server.baseURL + "metrics")
        let process = ProcessSample(pid: server.pid)
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").count) ?? 0
        let totals = counts.snapshot
        var tables: [String: Double] = [:]
        for (labels, value) in metrics["duet_table_entries", default: []] {
            if let table = labels["table"] { tables[table] = value }
        }
        func sum(_ name: String) -> Double { metrics[name, default: []].map(\.value).reduce(0, +) }
        return SoakSample(
            t: (ContinuousClock.now - started).seconds, rssKiB: Double(process.rssKiB), heapKiB: sum("duet_heap_in_use_bytes") / 1_024,
            fds: Double(fds), rooms: sum("duet_rooms"), participants: sum("duet_participants"), connections: sum("duet_connections"),
            storeKiB: Double(server.storeBytes) / 1_024, walKiB: Double(server.storeBytes(of: "rooms.sqlite-wal")) / 1_024,
            activeCalls: totals.active, calls: totals.calls,
            errors: totals.errors.values.reduce(0, +), tables: tables)
    }

    /// Prometheus text: name → [(labels, value)].
    static func scrape(_ url: String) async throws -> [String: [(labels: [String: String], value: Double)]] {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        let body = String(buffer: try await response.body.collect(upTo: 4 << 20))
        guard response.status == .ok else { throw BenchError("GET \(url): \(response.status.code)") }
        var metrics: [String: [(labels: [String: String], value: Double)]] = [:]
        for line in body.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            var name = Substring(series)
            var labels: [String: String] = [:]
            if let open = series.firstIndex(of: "{"), series.hasSuffix("}") {
                name = series[..<open]
                for pair in series[series.index(after: open)..<series.index(before: series.endIndex)].split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    if parts.count == 2 {
                        labels[String(parts[0])] = String(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
                    }
                }
            }
            metrics[String(name), default: []].append((labels, value))
        }
        return metrics
    }
}
