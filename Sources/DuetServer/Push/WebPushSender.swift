import AsyncHTTPClient
import DuetProtocol
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// Delivers one encrypted message to one subscription (RFC 8030 §5) with AsyncHTTPClient, retrying within the
/// message's lifetime (`PushRetryPolicy`), and forgetting a subscription its push service says is gone.
///
/// Outbound requests are a security surface: https only, no redirects, never to loopback/private/link-local
/// addresses unless the operator allows it (`PushDestinationPolicy`), each connection made to the address that was
/// checked (`dnsOverride`: the certificate is still checked for the endpoint's host), bounded in time and in number.
public final class WebPushSender: Sendable {
    public struct Settings: Sendable {
        public var destinations = PushDestinationPolicy(allowPrivate: false)
        public var retry = PushRetryPolicy()
        /// `--push-ca-file`: more trusted roots (PEM), for a lab's push service with a certificate of its own.
        public var additionalTrustRootsFile: String?
        /// The VAPID `sub` (`--push-contact`): how a push service reaches the operator.
        public var contact = "mailto:operator@duet.invalid"
        public var maxConcurrent = 8
        public var maxQueued = 1_000
        /// At most this many of `maxConcurrent` to one push service host.
        public var maxConcurrentPerHost = 3
        public var connectTimeout: TimeAmount = .seconds(5)
        public var requestTimeout: TimeAmount = .seconds(10)
        public init() {}
    }

    public struct Message: Sendable {
        /// The plaintext (JSON); encrypted per subscription.
        public var payload: [UInt8]
        /// RFC 8030 §5.4: a later message with the same topic replaces one not yet delivered (a cancel replaces its
        /// ring). At most 32 characters of the base64url alphabet.
        public var topic: String?
        /// RFC 8030 §5.2: how long the push service keeps it for an offline device; no longer than it matters.
        public var ttlSeconds: Int
        /// RFC 8030 §5.3.
        public var urgency = "high"

        public init(payload: [UInt8], topic: String?, ttlSeconds: Int, urgency: String = "high") {
            self.payload = payload
            self.topic = topic
            self.ttlSeconds = ttlSeconds
            self.urgency = urgency
        }
    }

    public enum Result: Sendable, Equatable {
        case delivered(attempts: Int)
        /// 404/410: removed from the store.
        case removed(status: Int)
        case failed(String)
        /// Not attempted: the endpoint or the message broke a rule, or the queue was full.
        case refused(String)
    }

    let vapid: VAPIDKey
    let settings: Settings
    let metrics: ServerMetrics
    let logger: Logger
    private let slots: PushConcurrency
    let hostSlots: PushHostConcurrency
    private let store: any PushSubscriptionStore

    public init(vapid: VAPIDKey, settings: Settings, store: any PushSubscriptionStore, metrics: ServerMetrics, logger: Logger) {
        self.vapid = vapid
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.logger = logger
        slots = PushConcurrency(limit: settings.maxConcurrent, queueLimit: settings.maxQueued)
        hostSlots = PushHostConcurrency(perHost: settings.maxConcurrentPerHost, queueLimit: settings.maxQueued)
    }

    public func deliver(_ message: Message, to subscription: PushSubscriptionRecord) async -> Result {
        let result = await attemptAll(message, to: subscription)
        switch result {
        case .delivered: metrics.push("sent")
        case .removed: metrics.push("removed")
        case .failed: metrics.push("failed")
        case .refused: metrics.push("refused")
        }
        if case .delivered = result {
            logger.debug(
                "push delivered", metadata: ["rid": "\(subscription.rid)", "host": "\(URL(string: subscription.endpoint)?.host ?? "?")"])
        } else {
            logger.notice("push not delivered", metadata: ["rid": "\(subscription.rid)", "result": "\(result)"])
        }
        return result
    }

    private func attemptAll(_ message: Message, to subscription: PushSubscriptionRecord) async -> Result {
        let endpoint: PushEndpoint
        let body: [UInt8]
        do {
            endpoint = try PushEndpoint(subscription.endpoint)
            let keys = try subscription.keys()
            body = try WebPushEncryption.encrypt(message.payload, p256dh: keys.p256dh, auth: keys.auth)
        } catch {
            return .refused(String(describing: error))
        }
        if let topic = message.topic, !Self.isValidTopic(topic) { return .refused("a Topic is at most 32 base64url characters") }
        // A place with this push service first, then one of all: a delivery waiting for a busy service holds none of
        // the places every other service needs. (Always in this order, given back in the other: no deadlock.)
        let hostSlots = self.hostSlots
        let host = endpoint.host
        guard await hostSlots.acquire(host) else { return .refused("too many pushes waiting; this one was dropped") }
        var holdingHost = true
        defer { if holdingHost { Task { await hostSlots.release(host) } } }
        guard await slots.acquire() else { return .refused("too many pushes waiting; this one was dropped") }
        let slots = self.slots
        var holding = true
        defer { if holding { Task { await slots.release() } } }
        let startMs = Self.nowMs()
        let deadlineMs = startMs + Int64(message.ttlSeconds) * 1000
        var attempt = 0
        while true {
            attempt += 1
            let nowMs = Self.nowMs()
            let outcome: PushRetryPolicy.Outcome
            do {
                let address = try await settings.destinations.destination(for: endpoint)
                // The TTL left: a retried ring must not outlive the ring.
                let ttl = max(0, Int((deadlineMs - nowMs) / 1000))
                outcome = try await post(body, to: endpoint, at: address, message: message, ttlSeconds: ttl)
            } catch let refusal as PushEndpoint.Refusal {
                return .refused(refusal.description)
            } catch {
                outcome = .transportFailure(String(describing: error))
            }
            switch settings.retry.decide(outcome, attempt: attempt, nowMs: Self.nowMs(), deadlineMs: deadlineMs) {
            case .delivered:
                return .delivered(attempts: attempt)
            case .removeSubscription:
                do {
                    try await store.removePushEndpoint(subscription.endpoint)
                } catch {
                    logger.warning("could not remove a gone push subscription", metadata: ["error": "\(error)"])
                }
                if case .answered(let status, _) = outcome { return .removed(status: status) }
                return .removed(status: 410)
            case .retry(let afterMs):
                metrics.pushRetry()
                // The slot is given back while waiting: a push service that keeps saying "later" must not hold
                // deliveries to everyone else.
                await slots.release()
                holding = false
                await hostSlots.release(host)
                holdingHost = false
                do {
                    try await Task.sleep(for: .milliseconds(afterMs))
                } catch {
                    return .failed("cancelled while waiting to retry")
                }
                guard await hostSlots.acquire(host) else { return .refused("too many pushes waiting; this retry was dropped") }
                holdingHost = true
                guard await slots.acquire() else { return .refused("too many pushes waiting; this retry was dropped") }
                holding = true
            case .giveUp(let reason):
                return .failed(reason)
            }
        }
    }

    private func post(
        _ body: [UInt8], to endpoint: PushEndpoint, at address: IPAddress, message: Message, ttlSeconds: Int
    ) async throws -> PushRetryPolicy.Outcome {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = settings.additionalTrustRootsFile { tls.additionalTrustRoots = [.file(file)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: settings.connectTimeout, read: settings.requestTimeout))
        if IPAddress(endpoint.host) == nil {
            // The pin only holds if the request's host is spelled as the key (PushEndpoint allows one spelling).
            guard URL(string: endpoint.url.absoluteString)?.host == endpoint.host else {
                throw PushEndpoint.Refusal("the push endpoint's host is not written as it was checked")
            }
            configuration.dnsOverride = [endpoint.host: address.description]
        }
        // One client per attempt: the override pins this connection to the address just checked.
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            var request = HTTPClientRequest(url: endpoint.url.absoluteString)
            request.method = .POST
            request.headers.add(name: "TTL", value: String(ttlSeconds))
            request.headers.add(name: "Urgency", value: message.urgency)
            if let topic = message.topic { request.headers.add(name: "Topic", value: topic) }
            request.headers.add(name: "Content-Encoding", value: "aes128gcm")
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.headers.add(
                name: "Authorization",
                value: try vapid.authorization(audience: endpoint.origin, subject: settings.contact, nowSeconds: Self.nowMs() / 1000))
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(request, timeout: settings.requestTimeout + settings.connectTimeout)
            let retryAfter = PushRetryPolicy.retryAfterMs(response.headers.first(name: "Retry-After"), nowMs: Self.nowMs())
            // Read (a bounded part of) the body so the connection ends cleanly; its text is only for logs.
            _ = try? await response.body.collect(upTo: 16 * 1024)
            try? await client.shutdown()
            return .answered(status: Int(response.status.code), retryAfterMs: retryAfter)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func isValidTopic(_ topic: String) -> Bool {
        (1...32).contains(topic.utf8.count)
            && topic.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                    || byte == 0x5F
            }
    }

    public static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
