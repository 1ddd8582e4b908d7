import DuetProtocol
import DuetTransport
import Foundation

/// Relay throughput: every client sends ICE-candidate-sized messages to its peer, either as fast as the
/// server takes them (a window of unanswered messages per sender) or at a fixed total rate.
struct RelayResult: Codable, Sendable {
    var server: ServerUnderTest.Kind
    var transport: String
    var pairs: Int
    var offeredRate: Double?
    var messagesPerSecond: Double
    var latencyMs: LatencySummary
    var serverRSSKiB: Int
    var serverCPUPercent: Double
}

enum RelayRun {
    static func run(
        _ kind: ServerUnderTest.Kind, over transport: SignalingTransportKind = .ws, pairs count: Int, seconds: Double, rate: Double?,
        window: Int = 64
    ) async throws -> RelayResult {
        let server = try ServerUnderTest(kind)
        let latency = LatencyRecorder()
        let pairs = try await Pairs.connect(count, on: server, over: transport, latency: latency)
        let senders = pairs.flatMap { [$0.a, $0.b] }
        let before = server.sample
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(seconds * 1_000))
        let receivedBefore = senders.reduce(0) { $0 + $1.received }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(until: deadline)
                for pair in pairs {
                    pair.a.releaseWaiters()
                    pair.b.releaseWaiters()
                }
            }
            for pair in pairs {
                for (sender, receiver) in server.kind == .echo
                    ? [(pair.a, pair.a), (pair.b, pair.b)] : [(pair.a, pair.b), (pair.b, pair.a)]
                {
                    group.addTask {
                        var sent = 0
                        let baseline = receiver.received
                        let interval = rate.map { Duration.nanoseconds(Int64(1e9 * Double(senders.count) / $0)) }
                        var next = ContinuousClock.now
                        while ContinuousClock.now < deadline {
                            if let interval {
                                next += interval
                                try await Task.sleep(until: next)
                            } else if sent - (receiver.received - baseline) >= window {
                                await receiver.waitForReceived(atLeast: baseline + sent - window + 1)
                                continue
                            }
                            try await sender.send(.ice, rid: pair.rid, payload: BenchClient.candidate)
                            sent += 1
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - started
        try await Task.sleep(for: .milliseconds(300))  // the last messages arrive
        let after = server.sample
        let delivered = senders.reduce(0) { $0 + $1.received } - receivedBefore
        let secondsTaken = elapsed.seconds
        for pair in pairs {
            await pair.a.close()
            await pair.b.close()
        }
        server.stop()
        return RelayResult(
            server: kind, transport: transport.rawValue, pairs: count, offeredRate: rate,
            messagesPerSecond: Double(delivered) / secondsTaken,
            latencyMs: latency.summary, serverRSSKiB: after.rssKiB,
            serverCPUPercent: 100 * (after.cpuSeconds - before.cpuSeconds) / secondsTaken)
    }
}
