import DuetLock

/// Caps on open signaling connections (WebSocket and SSE streams), per client address and in total, so one address
/// (or everyone) cannot hold the server's memory. Each admitted connection holds a `Ticket` and returns it when it
/// ends. The per-address table only has entries for addresses with open connections, so it is bounded by the total.
public final class ConnectionLimiter: Sendable {
    public struct Limits: Sendable {
        public var perAddress: Int
        public var total: Int
        public init(perAddress: Int, total: Int) {
            self.perAddress = perAddress
            self.total = total
        }
    }

    public enum Refusal: Error, Sendable, Equatable { case perAddress, total }

    public struct Ticket: Sendable {
        fileprivate let key: String
    }

    private struct State {
        var open: [String: Int] = [:]
        var total = 0
    }

    public let limits: Limits
    private let state = Mutex(State())

    public init(limits: Limits) { self.limits = limits }

    public func admit(_ key: String) -> Result<Ticket, Refusal> {
        state.withLock { state in
            if state.total >= limits.total { return .failure(.total) }
            let open = state.open[key, default: 0]
            if open >= limits.perAddress { return .failure(.perAddress) }
            state.open[key] = open + 1
            state.total += 1
            return .success(Ticket(key: key))
        }
    }

    /// Whether a connection from `key` would be refused now (for the refused upgrade's explanation).
    public func wouldRefuse(_ key: String) -> Refusal? {
        state.withLock { state in
            if state.total >= limits.total { return .total }
            return state.open[key, default: 0] >= limits.perAddress ? .perAddress : nil
        }
    }

    public func release(_ ticket: Ticket) {
        state.withLock { state in
            state.total -= 1
            let open = state.open[ticket.key, default: 1] - 1
            state.open[ticket.key] = open > 0 ? open : nil
        }
    }

    public var openConnections: Int { state.withLock { $0.total } }
    /// Addresses with an open connection (the per-address table's entries).
    public var addresses: Int { state.withLock { $0.open.count } }
}
