import DuetProtocol
import DuetRooms

/// What a connection must not hear before the store has it (issue 34: acknowledged means durable). A step of the
/// core that decides a final fact (`DurableFact.isFinal`: a room ended, a seat left or given up) sends its news —
/// `room_ended`, the partner's `room_state` without the leaver, a watcher's count — with the fact; the news waits
/// here for the fact's ticket (`StoreQueue`), and whatever the same connection is sent after it waits behind it, so
/// that nobody hears of a later state before an earlier one. A `kill -9` the instant a client is told can then
/// never undo what it was told.
///
/// A pure value: the shard holds it under its lock, the store's writer says how far the store has everything
/// (`release(through:)`). A connection that closes takes what waited for it along (`forget`).
struct DurableGate {
    enum Item: Equatable {
        case send(Envelope)
        case close(CloseCode, reason: String)
    }

    private var held: [ConnectionID: [(ticket: UInt64, item: Item)]] = [:]
    /// The encoded size of what waits, per connection: bounded as a connection's queue is (`OutboundBound.bytes`),
    /// so that a store that is away cannot make a connection hold more than it could have queued.
    private var bytes: [ConnectionID: Int] = [:]

    /// What an item would take in the connection's queue (a close: its frame, a few bytes).
    static func cost(_ item: Item) -> Int {
        switch item {
        case .send(let envelope): envelope.encodedString().utf8.count
        case .close(_, let reason): 4 + reason.utf8.count
        }
    }

    var isEmpty: Bool { held.isEmpty }

    enum Verdict: Equatable {
        /// Nothing waits for it: send it now.
        case now
        case held
        /// The connection already has as much waiting as it may have queued (`OutboundBound`, in messages or in
        /// bytes): it is not reading, or the store has been away long enough that it cannot be told anything more.
        case full
    }

    /// Whether `item` for `id` waits: for `ticket` (the final fact of the step that sent it), or behind what waits
    /// for the connection already.
    mutating func admit(_ item: Item, for id: ConnectionID, ticket: UInt64?) -> Verdict {
        if let waiting = held[id], let last = waiting.last {
            let cost = Self.cost(item)
            guard waiting.count < OutboundBound.messages, bytes[id, default: 0] + cost <= OutboundBound.bytes else { return .full }
            held[id]!.append((max(last.ticket, ticket ?? 0), item))
            bytes[id, default: 0] += cost
            return .held
        }
        guard let ticket else { return .now }
        held[id] = [(ticket, item)]
        bytes[id] = Self.cost(item)
        return .held
    }

    /// What the store now has everything for, in the order each connection was to hear it (connections in id order).
    mutating func release(through durable: UInt64) -> [(ConnectionID, Item)] {
        guard !held.isEmpty else { return [] }
        var out: [(ConnectionID, Item)] = []
        for id in held.keys.sorted() {
            guard let waiting = held[id] else { continue }
            let ready = waiting.prefix { $0.ticket <= durable }
            guard !ready.isEmpty else { continue }
            out.append(contentsOf: ready.map { (id, $0.item) })
            if ready.count == waiting.count {
                held[id] = nil
                bytes[id] = nil
            } else {
                held[id] = Array(waiting.dropFirst(ready.count))
                bytes[id, default: 0] -= ready.reduce(0) { $0 + Self.cost($1.item) }
            }
        }
        return out
    }

    /// What waited for a connection that closed, was cut off or moved to another shard (`take`).
    @discardableResult
    mutating func forget(_ id: ConnectionID) -> [(ticket: UInt64, item: Item)] {
        bytes[id] = nil
        return held.removeValue(forKey: id) ?? []
    }

    /// What a moving connection brings to its new shard, still waiting for the same tickets.
    mutating func adopt(_ waiting: [(ticket: UInt64, item: Item)], for id: ConnectionID) {
        guard !waiting.isEmpty else { return }
        held[id, default: []].append(contentsOf: waiting)
        bytes[id, default: 0] += waiting.reduce(0) { $0 + Self.cost($1.item) }
    }

    func waiting(for id: ConnectionID) -> Int { held[id]?.count ?? 0 }

    var waitingCount: Int { held.values.reduce(0) { $0 + $1.count } }

    mutating func removeAll() {
        held = [:]
        bytes = [:]
    }
}

extension DurableFact {
    /// What a client is told as final: a client that heard it must find it so after any crash (issue 34). A room's
    /// life (`roomLive`, `roomClaimed`, `roomGone`) is recovered from its clients and is not.
    var isFinal: Bool {
        switch self {
        case .roomEnded, .seatRevoked: true
        case .roomLive, .roomClaimed, .roomGone: false
        }
    }
}
