import DuetProtocol
import Crypto
import DuetRooms
import Foundation
import Logging

/// Turns the room logic's `PushAlert`s into Web Push messages for the room's subscribed devices, off the relay path:
/// `alert` returns at once; the store is read and every device is sent to in a task of its own (bounded by the
/// sender's concurrency).
public final class PushDispatcher: Sendable {
    let sender: WebPushSender
    let subscriptions: any PushSubscriptionStore
    let logger: Logger
    /// Everything a join alert is sent with: the seed's push lives a minute (a join that old is not news).
    static let joinAlertTTLSeconds = 60

    public init(sender: WebPushSender, subscriptions: any PushSubscriptionStore, logger: Logger) {
        self.sender = sender
        self.subscriptions = subscriptions
        self.logger = logger
    }

    /// Called under the hub's lock: only starts the work.
    public func alert(_ alert: PushAlert) {
        Task { _ = await self.send(alert) }
    }

    /// Sends one alert to every subscribed device not excluded; the results in the order of the devices.
    @discardableResult
    public func send(_ alert: PushAlert) async -> [WebPushSender.Result] {
        let targets: [PushSubscriptionRecord]
        do {
            targets = try await subscriptions.pushSubscriptions(rid: alert.rid).filter { !alert.excludedEndpoints.contains($0.endpoint) }
        } catch {
            logger.warning("push alert not sent: the subscriptions could not be read", metadata: ["rid": "\(alert.rid)", "error": "\(error)"])
            return []
        }
        guard !targets.isEmpty else { return [] }
        let message = Self.message(for: alert)
        let sender = self.sender
        return await withTaskGroup(of: (Int, WebPushSender.Result).self) { group in
            for (index, target) in targets.enumerated() {
                group.addTask { (index, await sender.deliver(message, to: target)) }
            }
            var results = [WebPushSender.Result](repeating: .failed("not sent"), count: targets.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
    }

    /// The payload a service worker gets. Serenada's fields (`title`, `body`, `url`, `kind`, `snapshotId`) so that its
    /// clients show it, and Duet's `v` and `roomId`.
    static func message(for alert: PushAlert) -> WebPushSender.Message {
        switch alert.kind {
        case .joined(let snapshotId):
            var payload: [String: Any] = [
                "v": 1, "kind": "join", "roomId": alert.rid, "url": "/call/\(alert.rid)",
                "title": "Duet", "body": "Someone joined your call",
            ]
            if let snapshotId { payload["snapshotId"] = snapshotId }
            let bytes = (try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
            return WebPushSender.Message(payload: Array(bytes), topic: topic("join", alert.rid), ttlSeconds: joinAlertTTLSeconds)
        }
    }

    /// A Topic (≤ 32 base64url characters) naming one subject, so that a newer message replaces an undelivered one.
    static func topic(_ kind: String, _ subject: String) -> String {
        String(Base64URL.encode(SHA256.hash(data: Data("\(kind)|\(subject)".utf8))).prefix(32))
    }
}
