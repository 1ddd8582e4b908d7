import Testing

@testable import DuetServer

/// The rules of outbound pushes, pure: which endpoints and addresses, and what to do after each answer.
@Suite struct PushPolicyTests {
    @Test func endpointsMustBeHttpsWithAHostAndNoCredentials() throws {
        let good = try PushEndpoint("https://fcm.googleapis.com/fcm/send/abc:def")
        #expect(good.origin == "https://fcm.googleapis.com")
        #expect(try PushEndpoint("https://push.example:8443/x").origin == "https://push.example:8443")
        #expect(try PushEndpoint("https://[2001:db8::1]/x").host == "2001:db8::1")
        for bad in [
            "http://push.example/x", "ftp://push.example/x", "https:///x", "https://user:pw@push.example/x",
            "https://push.example/x#frag", "not a url", "https://push.example/" + String(repeating: "a", count: 2100),
        ] {
            #expect(throws: PushEndpoint.Refusal.self, "\(bad.prefix(40))") { try PushEndpoint(bad) }
        }
    }

    @Test func privateDestinationsAreRefusedUnlessAllowed() async throws {
        let strict = PushDestinationPolicy(allowPrivate: false)
        for address in [
            "127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
            "::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "224.0.0.1",
        ] {
            #expect(strict.refusal(try #require(IPAddress(address))) != nil, "\(address)")
        }
        for address in ["8.8.8.8", "142.250.0.1", "2001:4860::1"] {
            #expect(strict.refusal(try #require(IPAddress(address))) == nil, "\(address)")
        }
        #expect(PushDestinationPolicy(allowPrivate: true).refusal(try #require(IPAddress("127.0.0.1"))) == nil)
        // A name is judged by what it resolves to: localhost is loopback.
        await #expect(throws: PushEndpoint.Refusal.self) { _ = try await strict.destination(for: try PushEndpoint("https://localhost/x")) }
        await #expect(throws: PushEndpoint.Refusal.self) {
            _ = try await strict.destination(for: try PushEndpoint("https://127.0.0.1:9/x"))
        }
        let allowed = try await PushDestinationPolicy(allowPrivate: true).destination(for: try PushEndpoint("https://localhost/x"))
        #expect(allowed.description == "127.0.0.1" || allowed.description == "0:0:0:0:0:0:0:1" || allowed.isIPv6)
    }

    @Test func retriesFollowTheAnswerWithinTheDeadline() {
        let policy = PushRetryPolicy()
        let now: Int64 = 1_000_000
        let deadline = now + 45_000
        #expect(policy.decide(.answered(status: 201, retryAfterMs: nil), attempt: 1, nowMs: now, deadlineMs: deadline) == .delivered)
        #expect(
            policy.decide(.answered(status: 404, retryAfterMs: nil), attempt: 1, nowMs: now, deadlineMs: deadline) == .removeSubscription)
        #expect(
            policy.decide(.answered(status: 410, retryAfterMs: nil), attempt: 3, nowMs: now, deadlineMs: deadline) == .removeSubscription)
        // Backoff doubles: 1 s, 2 s, 4 s …
        #expect(
            policy.decide(.answered(status: 503, retryAfterMs: nil), attempt: 1, nowMs: now, deadlineMs: deadline) == .retry(afterMs: 1_000)
        )
        #expect(
            policy.decide(.answered(status: 500, retryAfterMs: nil), attempt: 3, nowMs: now, deadlineMs: deadline) == .retry(afterMs: 4_000)
        )
        #expect(policy.decide(.transportFailure("reset"), attempt: 2, nowMs: now, deadlineMs: deadline) == .retry(afterMs: 2_000))
        // Retry-After wins when longer, not when shorter.
        #expect(
            policy.decide(.answered(status: 429, retryAfterMs: 7_000), attempt: 1, nowMs: now, deadlineMs: deadline)
                == .retry(afterMs: 7_000))
        #expect(
            policy.decide(.answered(status: 429, retryAfterMs: 10), attempt: 2, nowMs: now, deadlineMs: deadline) == .retry(afterMs: 2_000))
        // Never past the deadline, never more than maxAttempts.
        if case .giveUp = policy.decide(.answered(status: 429, retryAfterMs: 60_000), attempt: 1, nowMs: now, deadlineMs: deadline) {
        } else {
            Issue.record("a retry after the deadline")
        }
        if case .giveUp = policy.decide(
            .answered(status: 503, retryAfterMs: nil), attempt: policy.maxAttempts, nowMs: now, deadlineMs: now + 3_600_000)
        {
        } else {
            Issue.record("more than maxAttempts")
        }
        // A request the service refuses for what it is is not repeated.
        for status in [400, 401, 403, 413] {
            if case .giveUp = policy.decide(.answered(status: status, retryAfterMs: nil), attempt: 1, nowMs: now, deadlineMs: deadline) {
            } else {
                Issue.record("retried \(status)")
            }
        }
    }

    @Test func retryAfterReadsSecondsAndDates() {
        let now: Int64 = 1_700_000_000_000
        #expect(PushRetryPolicy.retryAfterMs("3", nowMs: now) == 3_000)
        #expect(PushRetryPolicy.retryAfterMs(" 0 ", nowMs: now) == 0)
        #expect(PushRetryPolicy.retryAfterMs("Tue, 14 Nov 2023 22:13:30 GMT", nowMs: now) == 10_000)
        #expect(PushRetryPolicy.retryAfterMs("soon", nowMs: now) == nil)
        #expect(PushRetryPolicy.retryAfterMs(nil, nowMs: now) == nil)
    }

    @Test func topicsAreShortBase64URL() {
        let topic = PushDispatcher.topic("ring", "some call id")
        #expect(topic.count == 32 && WebPushSender.isValidTopic(topic))
        #expect(!WebPushSender.isValidTopic(String(repeating: "a", count: 33)))
        #expect(!WebPushSender.isValidTopic("has space"))
        #expect(!WebPushSender.isValidTopic(""))
    }
}
