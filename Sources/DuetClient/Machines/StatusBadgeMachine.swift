/// Seed 001's status badge for an app's call screen, as a pure value: "Reconnecting…" only after
/// `RECONNECTING_BADGE_DEBOUNCE_MS` in `recovering` (a blip stays invisible), "Taking longer than usual…"
/// with an inline "Leave call" in `retrying`, "<peer> is reconnecting…" while the other side is suspended.
/// The browser client's `ui/status-badge-machine.js` is the same machine.
public struct StatusBadgeMachine: Sendable, Equatable {
    public enum Badge: Sendable, Equatable {
        case hidden
        /// Recovering, inside the debounce: show nothing yet, and certainly not "connected".
        case pending
        case connected
        case reconnecting
        /// Carries "Taking longer than usual…" and the inline "Leave call".
        case retrying
        case peerReconnecting
    }

    public enum Event: Sendable, Equatable {
        case phase(CallPhase)
        case status(ConnectionStatus)
        case peer(suspended: Bool)
        case debounceElapsed
    }

    public enum Action: Sendable, Equatable {
        case show(Badge)
        case scheduleDebounce(afterMs: Int64)
        case cancelDebounce
    }

    public private(set) var badge: Badge = .hidden
    private var inCall = false
    private var status: ConnectionStatus = .connected
    private var peerSuspended = false
    private var debounced = false

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .phase(let phase):
            inCall = phase == .inCall
            if !inCall {
                debounced = false
                actions.append(.cancelDebounce)
            }
        case .status(let next):
            guard next != status else { break }
            if next == .recovering, status == .connected {
                debounced = false
                actions.append(.scheduleDebounce(afterMs: ResilienceConstants.RECONNECTING_BADGE_DEBOUNCE_MS))
            }
            if next == .connected {
                debounced = false
                actions.append(.cancelDebounce)
            }
            status = next
        case .peer(let suspended):
            peerSuspended = suspended
        case .debounceElapsed:
            if status == .recovering { debounced = true }
        }
        let next = derived
        if next != badge {
            badge = next
            actions.append(.show(next))
        }
        return actions
    }

    private var derived: Badge {
        guard inCall else { return .hidden }
        switch status {
        case .retrying: return .retrying
        case .recovering: return debounced ? .reconnecting : .pending
        case .connected: return peerSuspended ? .peerReconnecting : .connected
        }
    }
}
