import CoreMetrics
import DuetProtocol
import Foundation
import Prometheus

/// The server's metrics, recorded through swift-metrics into this server's own Prometheus registry
/// (not the global bootstrap, so several servers can live in one process, as in the tests).
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["duet_join_latency_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .seconds(1),
        ]
        self.factory = factory
        messagesIn = MessageCounters(name: "duet_messages_in_total", factory: factory)
        messagesOut = MessageCounters(name: "duet_messages_out_total", factory: factory)
        stunAnswered = CoreMetrics.Counter(label: "duet_stun_requests_total", dimensions: [("result", "answered")], factory: factory)
        stunDropped = CoreMetrics.Counter(label: "duet_stun_requests_total", dimensions: [("result", "dropped")], factory: factory)
    }

    private let messagesIn: MessageCounters
    private let messagesOut: MessageCounters
    private let stunAnswered: CoreMetrics.Counter
    private let stunDropped: CoreMetrics.Counter

    /// A datagram on the STUN port: answered, or dropped (not a Binding request, or over the address's rate).
    public func stunRequest(answered: Bool) { (answered ? stunAnswered : stunDropped).increment() }

    public func connectionOpened(_ kind: TransportKind) { gauge("duet_connections", ["transport": kind.rawValue]).increment(by: 1) }
    public func connectionClosed(_ kind: TransportKind, reason: String) {
        gauge("duet_connections", ["transport": kind.rawValue]).decrement(by: 1)
        counter("duet_disconnects_total", ["transport": kind.rawValue, "reason": reason]).increment()
    }
    public func messageIn(_ type: String) { messagesIn.count(type) }
    public func messageOut(_ type: String) { messagesOut.count(type) }
    public func error(_ code: ErrorCode) { counter("duet_errors_total", ["code": code.rawValue]).increment() }
    public func joinLatency(nanoseconds: Int64) {
        CoreMetrics.Timer(label: "duet_join_latency_seconds", dimensions: [], factory: factory).recordNanoseconds(nanoseconds)
    }
    /// `duet_table_entries{table}`: how many entries each of the server's tables holds (the soak's leak check).
    public func tableEntries(_ sizes: [String: Int]) {
        for (table, count) in sizes { gaugeValue("duet_table_entries", ["table": table], Double(count)) }
    }

    public func roomCounts(rooms: Int, connected: Int, suspended: Int) {
        gauge("duet_rooms", [:]).set(Double(rooms))
        gauge("duet_participants", ["status": "connected"]).set(Double(connected))
        gauge("duet_participants", ["status": "suspended"]).set(Double(suspended))
    }

    /// The C heap in use (glibc's `mallinfo2`), read at each scrape: what connections really cost, and whether memory
    /// comes back after they close, independently of how the allocator holds pages (RSS). benchmarks/compare.sh reads it.
    public func heapInUse(bytes: Int) {
        gauge("duet_heap_in_use_bytes", [:]).set(Double(bytes))
    }
    public func httpRejected(_ route: String, status: Int) {
        counter("duet_http_rejections_total", ["route": route, "status": String(status)]).increment()
    }

    public func exposition() -> String { registry.emitToString() }

    private func counter(_ name: String, _ labels: [String: String]) -> CoreMetrics.Counter {
        CoreMetrics.Counter(label: name, dimensions: labels.sorted { $0.key < $1.key }, factory: factory)
    }
    private func gauge(_ name: String, _ labels: [String: String]) -> CoreMetrics.Meter {
        CoreMetrics.Meter(label: name, dimensions: labels.sorted { $0.key < $1.key }, factory: factory)
    }
}

/// One counter per message type, made once: every message in and out is counted, and making a counter
/// through the factory each time (a registry lookup under a lock) cost 5 % of the relay's CPU.
private struct MessageCounters: Sendable {
    let byType: [String: CoreMetrics.Counter]
    let unknown: CoreMetrics.Counter

    init(name: String, factory: PrometheusMetricsFactory) {
        var byType: [String: CoreMetrics.Counter] = [:]
        for type in MessageType.allCases {
            byType[type.rawValue] = CoreMetrics.Counter(label: name, dimensions: [("type", type.rawValue)], factory: factory)
        }
        self.byType = byType
        unknown = CoreMetrics.Counter(label: name, dimensions: [("type", "unknown")], factory: factory)
    }

    /// Unknown types are counted under one label so a client cannot grow the label set without bound.
    func count(_ type: String) { (byType[type] ?? unknown).increment() }
}

// MARK: - The durable store (`StoreService`)

extension ServerMetrics {
    /// `duet_store_up` 1/0 and `duet_store_pending_facts`: what has not reached the store yet.
    public func storeState(up: Bool, pending: Int) {
        gaugeValue("duet_store_up", [:], up ? 1 : 0)
        gaugeValue("duet_store_pending_facts", [:], Double(pending))
    }
    /// `duet_store_waiting_messages`: news of final facts (`room_ended`, a partner's `room_state` after a leave) that
    /// waits for the store to have them (`DurableGate`); above 0 for more than a moment only while the store is away.
    func waitingForStore(_ count: Int) { gaugeValue("duet_store_waiting_messages", [:], Double(count)) }
    public func storeWrite(facts: Int, ok: Bool) {
        CoreMetrics.Counter(label: "duet_store_writes_total", dimensions: [("result", ok ? "ok" : "failed")], factory: factory)
            .increment(by: Int64(facts))
    }
    /// Facts the store told this node (load, other nodes' writes, dead nodes' rooms).
    public func storeLearned(_ count: Int) {
        CoreMetrics.Counter(label: "duet_store_learned_total", dimensions: [], factory: factory).increment(by: Int64(count))
    }
    /// `duet_node_info{node="…"} 1`: which node of a cluster these metrics come from (`--node-id`).
    public func nodeInfo(_ node: String) { gaugeValue("duet_node_info", ["node": node], 1) }

    private func gaugeValue(_ name: String, _ labels: [String: String], _ value: Double) {
        CoreMetrics.Gauge(label: name, dimensions: labels.sorted { $0.key < $1.key }, factory: factory).record(value)
    }
}

// MARK: - Web Push (`WebPushSender`)

extension ServerMetrics {
    /// `duet_push_total{result}`: each delivery's end — sent, failed (gave up), removed (404/410: the subscription
    /// was forgotten), refused (never attempted: a forbidden destination, a bad key, a full queue).
    public func push(_ result: String) {
        CoreMetrics.Counter(label: "duet_push_total", dimensions: [("result", result)], factory: factory).increment()
    }
    /// `duet_push_alerts_total{kind}` and `duet_push_alert_devices_total{kind}`: alerts dispatched (join, ring,
    /// ring_end) and the devices each was sent to (after the exclusions), counted when the devices are known.
    public func pushAlert(kind: String, devices: Int) {
        CoreMetrics.Counter(label: "duet_push_alerts_total", dimensions: [("kind", kind)], factory: factory).increment()
        CoreMetrics.Counter(label: "duet_push_alert_devices_total", dimensions: [("kind", kind)], factory: factory).increment(
            by: Int64(devices))
    }
    /// `duet_push_retries_total`: attempts after the first (429, 5xx, no answer).
    public func pushRetry() {
        CoreMetrics.Counter(label: "duet_push_retries_total", dimensions: [], factory: factory).increment()
    }
}

extension ServerMetrics {
    /// `duet_rings_total{event}`: rings started, and how they ended (accepted, declined, no_answer, cancelled,
    /// unreachable).
    public func ring(_ event: String) {
        CoreMetrics.Counter(label: "duet_rings_total", dimensions: [("event", event)], factory: factory).increment()
    }
}
