import Crypto
import DuetLock
import DuetProtocol
import DuetRooms
import Foundation
import Logging

/// Turns the room logic's `PushAlert`s into Web Push messages for the room's subscribed devices, off the relay path:
/// `alert` returns at once; the store is read and every device is sent to in a task of its own (bounded by the
/// sender's concurrency). For a ring it reports back which devices a push reached (`SessionHub.ringPushed`), so
/// the caller sees "ringing on N devices", or "unreachable" when nothing could be reached.
public final class PushDispatcher: Sendable {
    let sender: WebPushSender
    let subscriptions: any PushSubscriptionStore
    let snapshots: SnapshotStore
    let logger: Logger
    /// Where ring reports go; set once the hub exists (the hub is made with this dispatcher's `alert`).
    private let reports = Mutex<(@Sendable (SignalingCore.RingPushReport) -> Void)?>(nil)
    /// The seed's join alert lives a minute (a join that old is not news).
    static let joinAlertTTLSeconds = 60
    /// The end of a ring is kept longer than the ring: a device that was offline for the whole ring must still have
    /// its notification replaced (a missed call) when it comes back.
    static let ringEndTTLSeconds = 3_600

    public init(sender: WebPushSender, subscriptions: any PushSubscriptionStore, snapshots: SnapshotStore = SnapshotStore(), logger: Logger)
    {
        self.sender = sender
        self.subscriptions = subscriptions
        self.snapshots = snapshots
        self.logger = logger
    }

    public func reportRings(to report: @escaping @Sendable (SignalingCore.RingPushReport) -> Void) {
        reports.withLock { $0 = report }
    }

    /// Called under the hub's lock: only starts the work.
    public func alert(_ alert: PushAlert) {
        Task { _ = await self.send(alert) }
    }

    /// Sends one alert to every subscribed device not excluded; the results in the order of the devices.
    @discardableResult
    public func send(_ alert: PushAlert, nowMs: Int64 = WebPushSender.nowMs()) async -> [WebPushSender.Result] {
        let targets: [PushSubscriptionRecord]
        do {
            targets = try await subscriptions.pushSubscriptions(rid: alert.rid).filter {
                !alert.excludedEndpoints.contains($0.endpoint) && !($0.deviceId.map(alert.excludedDevices.contains) ?? false)
            }
        } catch {
            logger.warning(
                "push alert not sent: the subscriptions could not be read", metadata: ["rid": "\(alert.rid)", "error": "\(error)"])
            report(alert, reached: [], finished: true)
            return []
        }
        let payload = Self.payload(for: alert, nowMs: nowMs)
        // The snapshot named by the join or ring, if this node holds it for this room: each device gets the content
        // key wrapped for it (Serenada's fields); a device it was not encrypted for gets none.
        let snapshot = alert.snapshotId.flatMap { snapshots.get($0, nowMs: nowMs) }.flatMap { $0.rid == alert.rid ? $0 : nil }
        sender.metrics.pushAlert(kind: Self.kindName(alert.kind), devices: targets.count)
        let sender = self.sender
        let results = await withTaskGroup(of: (Int, WebPushSender.Result).self) { group in
            for (index, target) in targets.enumerated() {
                let message = Self.message(payload, alert: alert, nowMs: nowMs, snapshot: snapshot?.pushFields(for: target.recipientId))
                group.addTask {
                    let result = await sender.deliver(message, to: target)
                    if case .delivered = result { self.report(alert, reached: [target.deviceKey], finished: false) }
                    return (index, result)
                }
            }
            var results = [WebPushSender.Result](repeating: .failed("not sent"), count: targets.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
        report(alert, reached: [], finished: true)
        return results
    }

    private func report(_ alert: PushAlert, reached: [String], finished: Bool) {
        guard case .ring(let callId, _, _, _) = alert.kind, let report = reports.withLock({ $0 }) else { return }
        report(SignalingCore.RingPushReport(rid: alert.rid, callId: callId, reached: reached, finished: finished))
    }

    /// The payload a service worker gets. Serenada's fields (`title`, `body`, `url`, `kind`, `snapshotId`) so that its
    /// clients show a join alert, and Duet's `v`, `roomId` and, for rings, `callId`, `caller` (sealed by the caller:
    /// the server cannot read or change it unnoticed) and `tag` (one notification per call).
    static func message(for alert: PushAlert, nowMs: Int64, snapshot: [String: Any]? = nil) -> WebPushSender.Message {
        message(payload(for: alert, nowMs: nowMs), alert: alert, nowMs: nowMs, snapshot: snapshot)
    }

    /// One device's message: the alert's payload, with the snapshot's fields for that device.
    static func message(_ payload: Payload, alert: PushAlert, nowMs: Int64, snapshot: [String: Any]?) -> WebPushSender.Message {
        var fields = payload.fields
        fields.merge(snapshot ?? [:]) { current, _ in current }
        let bytes =
            (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return WebPushSender.Message(payload: Array(bytes), topic: payload.topic, ttlSeconds: payload.ttl)
    }

    /// What every device is told of an alert (JSON values only, so it may cross into the delivery tasks).
    struct Payload: @unchecked Sendable {
        // @unchecked: `fields` holds only strings, numbers and JSONSerialization's output for a `JSONValue` (arrays,
        // dictionaries, strings, numbers), immutable values that are never shared mutably.
        var fields: [String: Any]
        var topic: String
        var ttl: Int
    }

    static func payload(for alert: PushAlert, nowMs: Int64) -> Payload {
        var payload: [String: Any] = ["v": 1, "roomId": alert.rid, "url": "/call/\(alert.rid)", "title": "Duet"]
        let topic: String
        let ttl: Int
        switch alert.kind {
        case .joined(let snapshotId):
            payload["kind"] = "join"
            payload["body"] = "Someone joined your call"
            if let snapshotId { payload["snapshotId"] = snapshotId }
            topic = Self.topic("join", alert.rid)
            ttl = joinAlertTTLSeconds
        case .ring(let callId, let caller, let expiresAtMs, let snapshotId):
            if let snapshotId { payload["snapshotId"] = snapshotId }
            payload["kind"] = "ring"
            payload["body"] = "Incoming call"
            payload["callId"] = callId
            payload["tag"] = callId
            payload["from"] = alert.cid
            payload["expiresAt"] = expiresAtMs
            if let caller {
                payload["caller"] = try? JSONSerialization.jsonObject(with: Data(JSONText.write(caller)), options: [.fragmentsAllowed])
            }
            topic = Self.topic("ring", alert.rid + "|" + callId)
            // No longer than the ring: a ring delivered after it ended would ring for nothing.
            ttl = max(1, Int((expiresAtMs - nowMs) / 1000))
        case .ringEnded(let callId, let reason):
            payload["kind"] = "ring_end"
            payload["body"] = reason == "answered_elsewhere" ? "Answered on another device" : "Missed call"
            payload["callId"] = callId
            payload["tag"] = callId
            payload["reason"] = reason
            topic = Self.topic("ring", alert.rid + "|" + callId)
            ttl = ringEndTTLSeconds
        }
        return Payload(fields: payload, topic: topic, ttl: ttl)
    }

    static func kindName(_ kind: PushAlert.Kind) -> String {
        switch kind {
        case .joined: "join"
        case .ring: "ring"
        case .ringEnded: "ring_end"
        }
    }

    /// A Topic (≤ 32 base64url characters) naming one subject, so that a newer message replaces an undelivered one.
    static func topic(_ kind: String, _ subject: String) -> String {
        String(Base64URL.encode(SHA256.hash(data: Data("\(kind)|\(subject)".utf8))).prefix(32))
    }
}
