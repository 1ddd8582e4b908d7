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
