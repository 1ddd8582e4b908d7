import DuetClient

/// The legal moves of the seeds' diagrams: 000 §2 for the phase, 001 for the connection status.
enum TransitionRules {
    static let phase: Set<String> = [
        "idle→creatingRoom", "idle→joining", "creatingRoom→joining", "creatingRoom→error",
        "joining→waiting", "joining→inCall", "joining→error", "joining→ending",
        "waiting→inCall", "waiting→ending", "inCall→waiting", "inCall→ending",
        "ending→idle", "error→idle",
    ]

    static func isLegal(_ from: CallPhase, _ to: CallPhase) -> Bool { phase.contains("\(from.rawValue)→\(to.rawValue)") }

    /// `connected → retrying` directly only for a call whose media never came up (the first-media deadline).
    static func isLegal(_ from: ConnectionStatus, _ to: ConnectionStatus, mediaEverConnected: Bool) -> Bool {
        switch (from, to) {
        case (.connected, .recovering), (.recovering, .connected), (.recovering, .retrying), (.retrying, .connected): true
        case (.connected, .retrying): !mediaEverConnected
        default: false
        }
    }
}
