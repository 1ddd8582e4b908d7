import DuetLock

/// Holds a connection-cap ticket between the check that took it and the connection that uses it, and returns it
/// exactly once: when the connection ends, or — should the upgrade never complete — when the request context is
/// freed, so that a failed upgrade cannot leak a slot and lock an address out.
final class AdmissionSlot: Sendable {
    private let state = Mutex<(limiter: ConnectionLimiter, ticket: ConnectionLimiter.Ticket)?>(nil)

    func hold(_ ticket: ConnectionLimiter.Ticket, of limiter: ConnectionLimiter) {
        let previous = state.withLock { state in
            defer { state = (limiter, ticket) }
            return state
        }
        if let previous { previous.limiter.release(previous.ticket) }
    }

    func release() {
        if let held = state.withLock({ state in
            defer { state = nil }
            return state
        }) {
            held.limiter.release(held.ticket)
        }
    }

    deinit { release() }
}
