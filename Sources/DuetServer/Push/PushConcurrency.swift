import DuetProtocol

/// At most `limit` deliveries run at once and at most `queueLimit` wait: a burst of rings (or a client trying to
/// make the server flood push services) costs bounded memory and bounded outbound connections.
actor PushConcurrency {
    private let limit: Int
    private let queueLimit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int, queueLimit: Int) {
        self.limit = limit
        self.queueLimit = queueLimit
    }

    /// False when the queue is full: the delivery is not attempted.
    func acquire() async -> Bool {
        if running < limit {
            running += 1
            return true
        }
        guard waiting.count < queueLimit else { return false }
        await withCheckedContinuation { waiting.append($0) }
        return true  // the releaser handed its slot over: `running` is unchanged
    }

    func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// At most `perHost` deliveries to one push service host at once (issue 31): a push service that answers slowly (or a
/// host someone subscribed to hold the server's slots) can take only that many of `PushConcurrency`'s, and rings to
/// every other service go on. Taken before a global place, so that deliveries waiting for a busy host hold none of
/// those. A host's limiter lives only while it has deliveries running or waiting; at most `queueLimit` wait in all.
actor PushHostConcurrency {
    private let perHost: Int
    private let queueLimit: Int
    private var hosts: [String: (running: Int, waiting: [CheckedContinuation<Void, Never>])] = [:]
    private var waitingCount = 0

    init(perHost: Int, queueLimit: Int) {
        self.perHost = perHost
        self.queueLimit = queueLimit
    }

    /// A place for `host`, at once or after waiting; false when too many wait already (the delivery is not attempted).
    func acquire(_ host: String) async -> Bool {
        var entry = hosts[host] ?? (0, [])
        if entry.running < perHost {
            entry.running += 1
            hosts[host] = entry
            return true
        }
        guard waitingCount < queueLimit else { return false }
        waitingCount += 1
        await withCheckedContinuation { continuation in
            hosts[host, default: (0, [])].waiting.append(continuation)
        }
        waitingCount -= 1
        return true  // the releaser handed its place over: `running` is unchanged
    }

    func release(_ host: String) {
        guard var entry = hosts[host] else { return }
        if entry.waiting.isEmpty {
            entry.running -= 1
            hosts[host] = entry.running == 0 ? nil : entry
        } else {
            entry.waiting.removeFirst().resume()
            hosts[host] = entry
        }
    }

    var activeHosts: Int { hosts.count }
    var waiting: Int { waitingCount }
}
