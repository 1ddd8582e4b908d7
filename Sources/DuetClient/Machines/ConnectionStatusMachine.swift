/// Seed 001: how healthy an active call is. No `failed` state: from `retrying` the engine keeps
/// escalating until the server says the room is gone or the user leaves.
public enum ConnectionStatus: String, Sendable, CaseIterable {
    case connected, recovering, retrying
}

/// The escalation cycle while `retrying`. `transportFallback` is taken only while signaling is down: for a
/// media-only failure (a dead TURN server or UDP path) closing a working transport would only flip WS↔SSE every
/// cycle and show the peer "reconnecting" for nothing.
public enum EscalationStep: String, Sendable, CaseIterable {
    case iceRestart, offerResend, rejoin, transportFallback
}

public struct ConnectionStatusMachine: Sendable, Equatable {
    public enum IceHealth: Sendable, Equatable {
        /// `connected` / `completed`.
        case connected
        /// `new` / `checking`: not degraded, not yet proven.
        case pending
        case disconnected, failed
    }

    public enum Event: Sendable, Equatable {
        case phaseChanged(CallPhase)
        case ice(IceHealth)
        case signaling(up: Bool)
        /// The server says the peer's seat is suspended (its transport is gone), or that it is back.
        case peerSuspended(Bool)
        case networkChanged
        case timerFired(TimerID)
    }

    public enum Action: Sendable, Equatable {
        case statusChanged(ConnectionStatus)
        case timer(TimerCommand)
        case escalate(EscalationStep)
    }

    public private(set) var status: ConnectionStatus = .connected
    /// Only an `inCall` phase drives transitions.
    public private(set) var isActive = false
    private var ice: IceHealth = .pending
    private var signalingUp = true
    private var escalationCount = 0
    /// Steps actually taken in this retrying spell: the pause grows with these, not with turns skipped.
    private var stepsTaken = 0
    /// In a call whose media has not connected yet. Not `recovering` (nothing was lost), but a call whose
    /// ICE never connects (a dead TURN server, no usable candidates) must escalate like one that dropped.
    private var awaitingFirstMedia = false
    /// While the peer is suspended, media and ICE to it are down because it is away: its trouble, not ours
    /// (the badge says "The other person is reconnecting…"). Our status then speaks of our own signaling only,
    /// and nothing escalates towards a peer that cannot answer (a relay to it fails); ICE is judged again when
    /// it is back.
    private var peerSuspended = false

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .phaseChanged(let phase):
            let active = phase == .inCall
            guard active != isActive else { return [] }
            isActive = active
            if !active { peerSuspended = false }  // the peer left with the call (its next one is told afresh)
            // Entering or leaving a call starts from `connected`; entering one whose media is not up yet gives
            // it until the retrying threshold to come up (from the peer's return, if it is away).
            var actions = reset()
            if active, ice != .connected, !peerSuspended {
                awaitingFirstMedia = true
                actions.append(.timer(.schedule(.retryingThreshold, afterMs: ResilienceConstants.CONNECTION_RETRYING_THRESHOLD_MS)))
            }
            return actions
        case .ice(let health):
            ice = health
            guard isActive else { return [] }
            switch health {
            case .disconnected, .failed: return peerSuspended ? [] : degrade()
            case .connected:
                if awaitingFirstMedia, status == .connected {
                    awaitingFirstMedia = false
                    return [.timer(.cancel(.retryingThreshold))]
                }
                return signalingUp ? restore() : []
            case .pending: return []
            }
        case .signaling(let up):
            signalingUp = up
            guard isActive else { return [] }
            if !up { return degrade() }
            return ice == .connected || peerSuspended ? restore() : []
        case .peerSuspended(let suspended):
            guard suspended != peerSuspended else { return [] }
            peerSuspended = suspended
            guard isActive else { return [] }
            // Away: whatever ICE-only trouble (or wait for first media) we had is dropped; our signaling's stays.
            if suspended { return signalingUp && (status != .connected || awaitingFirstMedia) ? reset() : [] }
            // Back: its media is judged again from where ICE is; not connected (down, or a new connection still
            // checking) is media to recover from now.
            return ice == .connected ? [] : degrade()
        case .networkChanged:
            // Our path moved; with the peer away there is no media to restart until it is back (then ICE is judged).
            guard isActive, !peerSuspended else { return [] }
            return degrade()
        case .timerFired(.retryingThreshold):
            guard isActive, status == .recovering || awaitingFirstMedia else { return [] }
            awaitingFirstMedia = false
            status = .retrying
            escalationCount = 0
            stepsTaken = 0
            return [.statusChanged(.retrying)] + escalate()
        case .timerFired(.retryEscalation):
            guard isActive, status == .retrying else { return [] }
            return escalate()
        case .timerFired:
            return []
        }
    }

    private mutating func degrade() -> [Action] {
        guard status == .connected else { return [] }
        status = .recovering
        return [
            .statusChanged(.recovering),
            .timer(.schedule(.retryingThreshold, afterMs: ResilienceConstants.CONNECTION_RETRYING_THRESHOLD_MS)),
        ]
    }

    private mutating func restore() -> [Action] {
        guard status != .connected else { return [] }
        return reset()
    }

    private mutating func reset() -> [Action] {
        let changed = status != .connected
        status = .connected
        escalationCount = 0
        stepsTaken = 0
        awaitingFirstMedia = false
        return (changed ? [.statusChanged(.connected)] : []) + [.timer(.cancel(.retryingThreshold)), .timer(.cancel(.retryEscalation))]
    }

    /// One step of the cycle now, the next after an exponentially growing pause.
    private mutating func escalate() -> [Action] {
        let cycle = EscalationStep.allCases
        // A healthy transport is never closed for a media-only failure: its turn passes to the next step.
        if cycle[escalationCount % cycle.count] == .transportFallback, signalingUp { escalationCount += 1 }
        let step = cycle[escalationCount % cycle.count]
        let pause =
            stepsTaken >= 20
            ? ResilienceConstants.RETRY_ESCALATION_CAP_MS
            : min(ResilienceConstants.RETRY_ESCALATION_CAP_MS, ResilienceConstants.RETRY_ESCALATION_BASE_MS << Int64(stepsTaken))
        escalationCount += 1
        stepsTaken += 1
        return [.escalate(step), .timer(.schedule(.retryEscalation, afterMs: pause))]
    }
}
