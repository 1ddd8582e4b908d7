import DuetClient
import DuetProtocol

/// A deliberately broken runtime, to show the invariants catch real bugs.
public enum Mutation: String, Sendable, CaseIterable {
    case none
    /// The ICE restart cooldown timer fires at once: restarts are no longer held back.
    case cooldownIgnored = "cooldown-ignored"
    /// Ping timers never fire: a dead socket is never noticed.
    case pingLost = "ping-lost"
    /// Relayed messages lose their epoch: negotiation from an older peer session gets applied.
    case epochDropped = "epoch-dropped"
    /// The server no longer closes silent SSE streams (`SSELiveness` switched off in its core).
    case sseLivenessRemoved = "sse-liveness-removed"

    func timerDelay(_ id: TimerID, _ ms: Int64) -> Int64 {
        switch (self, id) {
        case (.cooldownIgnored, .iceRestartCooldown): 0
        case (.pingLost, .ping): 365 * 24 * 3_600_000
        default: ms
        }
    }

    func received(_ envelope: Envelope) -> Envelope {
        guard self == .epochDropped else { return envelope }
        var copy = envelope
        copy.epoch = nil
        return copy
    }
}
