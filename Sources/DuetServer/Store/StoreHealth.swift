import DuetLock

/// Whether the store answers, for `/healthz`, `/metrics` and the logs. A store that is down does not make the node
/// unhealthy: signaling goes on from memory (a load balancer must not take the node out for it), so `/healthz`
/// stays 200 and says what is wrong.
public final class StoreHealth: Sendable {
    public enum State: Sendable, Equatable {
        case starting
        case up
        case down(String)
    }

    private let state = Mutex(State.starting)
    private let loaded = Mutex(false)
    public let engine: String

    /// Whether what the store remembers has reached the core (at start, or later when the store came back).
    var isLoaded: Bool { loaded.withLock { $0 } }
    func markLoaded() { loaded.withLock { $0 = true } }

    public init(engine: String) { self.engine = engine }

    public var current: State { state.withLock { $0 } }

    /// Returns the previous state, so that only a change is logged.
    @discardableResult
    func set(_ new: State) -> State {
        state.withLock { state in
            defer { state = new }
            return state
        }
    }

    /// One line for `/healthz`.
    public var summary: String {
        switch current {
        case .starting: "store \(engine): starting"
        case .up: "store \(engine): up"
        case .down(let reason): "store \(engine): DOWN (\(reason)); signaling continues from memory and catches up when it returns"
        }
    }
}

/// The database named at start does not answer or refuses us: `duet serve` exits 69 (EX_UNAVAILABLE) saying so.
public struct StoreUnavailable: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A database URL fit for a log or an error message: the password is never printed.
public func redactedDatabaseURL(_ url: String) -> String {
    guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].lastIndex(of: "@") else { return url }
    let credentials = url[scheme.upperBound..<at]
    guard let colon = credentials.firstIndex(of: ":") else { return url }
    return String(url[..<colon]) + ":***" + String(url[at...])
}
