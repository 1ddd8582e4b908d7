/// Seed 001's status badge for an app's call screen, as a pure value: "Reconnecting…" only after
/// `RECONNECTING_BADGE_DEBOUNCE_MS` of trouble (a blip stays invisible), "Taking longer than usual…" with an
/// inline "Leave call" in `retrying`, "The other person is reconnecting…" while the peer is suspended and our
/// own signaling is fine (their trouble, not ours), "Connecting…" until media has connected — never
/// "Connected" before it is. Trouble also counts while waiting (signaling down). The browser client's
/// `ui/status-badge-machine.js` is the same machine.
public struct StatusBadgeMachine: Sendable, Equatable {
    public enum Badge: Sendable, Equatable {
        case hidden
        /// Recovering, inside the debounce: show nothing yet, and certainly not "connected".
        case pending
        /// In the call, media not (yet) connected.
        case connecting
        case connected
        case reconnecting
        /// "Taking longer than usual…" and the inline "Leave call"; `everConnected` picks
        /// "Reconnecting…" over "Connecting…".
        case retrying(everConnected: Bool)
        case peerReconnecting
    }

    public enum Event: Sendable, Equatable {
        case phase(CallPhase)
        case status(ConnectionStatus)
        case peer(suspended: Bool)
        case signaling(up: Bool)
        /// ICE connected or completed.
        case media(connected: Bool)
        case debounceElapsed
    }

    public enum Action: Sendable, Equatable {
        case show(Badge)
        case scheduleDebounce(afterMs: Int64)
        case cancelDebounce
    }

    public private(set) var badge: Badge = .hidden
    private var phase: CallPhase = .idle
    private var status: ConnectionStatus = .connected
    private var peerSuspended = false
    private var signalingUp = false
    private var mediaConnected = false
    private var everConnected = false
    private var troubled = false
    private var debounced = false

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .phase(let next):
            if next != phase, next == .inCall || phase == .inCall { everConnected = false }
            phase = next
        case .status(let next): status = next
        case .peer(let suspended): peerSuspended = suspended
        case .signaling(let up): signalingUp = up
        case .media(let connected):
            mediaConnected = connected
            if connected, phase == .inCall { everConnected = true }
        case .debounceElapsed:
            if troubled { debounced = true }
        }
        var actions: [Action] = []
        let nowTroubled = isTroubled
        if nowTroubled, !troubled {
            debounced = false
            actions.append(.scheduleDebounce(afterMs: ResilienceConstants.RECONNECTING_BADGE_DEBOUNCE_MS))
        }
        if !nowTroubled, troubled {
            debounced = false
            actions.append(.cancelDebounce)
        }
        troubled = nowTroubled
        let next = derived
        if next != badge {
            badge = next
            actions.append(.show(next))
        }
        return actions
    }

    private var isTroubled: Bool {
        if phase == .inCall { return status == .recovering }
        return phase == .waiting && !signalingUp
    }

    private var derived: Badge {
        let theirs = signalingUp && peerSuspended
        if phase == .waiting { return troubled && debounced ? .reconnecting : .hidden }
        guard phase == .inCall else { return .hidden }
        if theirs, status != .connected { return .peerReconnecting }
        switch status {
        case .retrying: return .retrying(everConnected: everConnected)
        case .recovering: return debounced ? .reconnecting : .pending
        case .connected:
            if peerSuspended { return .peerReconnecting }
            return mediaConnected ? .connected : .connecting
        }
    }
}
