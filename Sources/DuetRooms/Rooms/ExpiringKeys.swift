/// Keys that matter until an expiry, in bounded memory: revoked seats and seats of ended rooms.
///
/// Every key of one set gets the same lifetime, so expiry order is insertion order: the oldest key is always at the
/// front, expired keys leave from there, and when the set is full the oldest is forgotten first (a client looping
/// join/leave cannot grow the server's memory; what it can do is make the oldest revocation lapse early, which
/// takes `capacity` leaves within one token lifetime — and joins are rate-limited).
struct ExpiringKeys: Sendable, Equatable {
    let capacity: Int
    private var expiries: [String: Int64] = [:]
    /// Insertion order; an entry is live while `expiries[key]` still equals its expiry (a key inserted again has a
    /// later occurrence with a later expiry, which is the one that counts).
    private var order: [(key: String, expiry: Int64)] = []
    private var head = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { expiries.count }
    /// Entries in the order list not yet dropped (what a repeated insert must not grow).
    var orderLength: Int { order.count - head }

    func contains(_ key: String, nowMs: Int64) -> Bool { (expiries[key] ?? .min) > nowMs }

    /// A key that is still live keeps its first expiry: every key of a set has the same lifetime, so the first
    /// one already covers what it guards (a token issued before it), and a repeated insert (a leave posted again
    /// and again) must not grow the order list.
    mutating func insert(_ key: String, until expiry: Int64, nowMs: Int64) {
        if contains(key, nowMs: nowMs) { return }
        expiries[key] = expiry
        order.append((key, expiry))
        while expiries.count > capacity, head < order.count { dropFront() }
        compact()
    }

    /// Forgets what has expired.
    mutating func prune(nowMs: Int64) {
        while head < order.count, order[head].expiry <= nowMs { dropFront() }
        compact()
    }

    private mutating func dropFront() {
        let entry = order[head]
        head += 1
        if expiries[entry.key] == entry.expiry { expiries[entry.key] = nil }
    }

    private mutating func compact() {
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.capacity == rhs.capacity && lhs.expiries == rhs.expiries }
}
