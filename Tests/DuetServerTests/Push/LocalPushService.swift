import DuetTestSupport
import Foundation

/// Tests/e2e/push/push_service.py as a process: a local RFC 8030 push service that is not Duet's code (it verifies
/// VAPID with py_vapid and decrypts with http_ece) and answers each endpoint by a script of statuses.
final class LocalPushService: Sendable {
    struct Subscription: Codable, Sendable {
        struct Keys: Codable, Sendable {
            var p256dh: String
            var auth: String
        }
        var endpoint: String
        var keys: Keys
    }
    struct Ready: Codable {
        var port: Int
        var subscriptions: [String: Subscription]
    }

    let process: Process
    let stdin: Pipe
    let directory: String
    let subscriptions: [String: Subscription]
    var caFile: String { directory + "/ca.pem" }

    /// `scripts`: endpoint name → statuses in order, e.g. `["flaky": "429:1,201"]` (status[:Retry-After]).
    static func start(_ scripts: [String: String]) async throws -> LocalPushService {
        let directory = TestServer.temporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", packageRoot + "/Tests/e2e/push/push_service.py", directory]
            + scripts.sorted { $0.key < $1.key }.flatMap { ["--script", "\($0.key)=\($0.value)"] }
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        let readyPath = directory + "/ready.json"
        let deadline = ContinuousClock.now + .seconds(20)
        while !FileManager.default.fileExists(atPath: readyPath) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                process.terminate()
                throw TestFailure("push_service.py did not start (is http_ece/py_vapid installed? scripts/test.sh installs them)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let ready = try JSONDecoder().decode(Ready.self, from: Data(contentsOf: URL(fileURLWithPath: readyPath)))
        return LocalPushService(process: process, stdin: stdin, directory: directory, subscriptions: ready.subscriptions)
    }

    private init(process: Process, stdin: Pipe, directory: String, subscriptions: [String: Subscription]) {
        self.process = process
        self.stdin = stdin
        self.directory = directory
        self.subscriptions = subscriptions
    }

    func subscription(_ name: String) throws -> Subscription {
        guard let found = subscriptions[name] else { throw TestFailure("no scripted endpoint \(name)") }
        return found
    }

    /// Every request the service got so far, in order (one JSON object each).
    func requests(_ name: String? = nil) throws -> [[String: Any]] {
        let path = directory + "/pushes.jsonl"
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { name == nil || $0["name"] as? String == name }
    }

    /// Waits until `name` has had `count` requests; fails after `timeout`.
    @discardableResult
    func waitForRequests(_ name: String, count: Int, timeout: Duration = .seconds(20)) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let found = try requests(name)
            if found.count >= count { return found }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("\(name): \(found.count) of \(count) pushes arrived within \(timeout): \(found)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func stop() {
        try? stdin.fileHandleForWriting.close()
        process.terminate()
    }
}

extension TestServer {
    /// `POST /api/push/subscribe?roomId=` with a device's subscription and the proof of a seat.
    func subscribePush(rid: String, _ subscription: LocalPushService.Subscription, cid: String?, token: String?) async throws -> HTTPResult
    {
        var body: [String: Any] = [
            "endpoint": subscription.endpoint, "keys": ["p256dh": subscription.keys.p256dh, "auth": subscription.keys.auth],
        ]
        if let cid { body["cid"] = cid }
        if let token { body["reconnectToken"] = token }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        return try await http(.POST, "api/push/subscribe?roomId=" + rid, body: json, headers: [("Content-Type", "application/json")])
    }

    /// One line of /metrics by its exact name and labels, 0 when absent.
    func metric(_ line: String) async throws -> Double {
        let text = try await http(.GET, "metrics").body
        for row in text.split(separator: "\n") where row.hasPrefix(line + " ") {
            return Double(row.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }
}
