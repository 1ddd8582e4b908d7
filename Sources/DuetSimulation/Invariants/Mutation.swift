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
    /// Descriptions carry no `o=` line: the negotiation machine can no longer tell an older offer delivered
    /// after a newer one (duplicate + reorder), so stale ICE credentials reach WebRTC.
    case originStripped = "origin-stripped"
    /// Both defences against stale negotiation gone (each alone stops a replayed offer of an older peer session).
    case epochAndOriginDropped = "epoch-and-origin-dropped"
    /// The runtime never reads the inbound counters (a report is never there): the media watchdog is blind.
    case watchdogOff = "watchdog-off"
    /// The runtime swallows a wedged peer connection's refusals: the engine goes on negotiating on a connection that
    /// refuses everything (issue 32's endless retries on a dead `RTCPeerConnection`).
    case wedgeUnreported = "wedge-unreported"
    /// The runtime drops every `restart_request` it receives: a guest that cannot restart in place (`duet call`) asks
    /// a host that never hears it.
    case restartRequestIgnored = "restart-request-ignored"
    /// Answers arrive without the offer they name (`offer`, issue 51): an answer to an offer rolled back since is
    /// applied to the next offer, and the offerer holds ICE credentials the peer has moved on from.
    case answerUnnamed = "answer-unnamed"

    func timerDelay(_ id: TimerID, _ ms: Int64) -> Int64 {
        switch (self, id) {
        case (.cooldownIgnored, .iceRestartCooldown): 0
        case (.pingLost, .ping): 365 * 24 * 3_600_000
        default: ms
        }
    }

    func created(_ sdp: String) -> String {
        guard self == .originStripped || self == .epochAndOriginDropped else { return sdp }
        return sdp.split(separator: "\r\n").filter { !$0.hasPrefix("o=") }.joined(separator: "\r\n") + "\r\n"
    }

    func received(_ envelope: Envelope) -> Envelope {
        var copy = envelope
        if self == .answerUnnamed, envelope.messageType == .answer { copy.payload["offer"] = nil }
        if self == .epochDropped || self == .epochAndOriginDropped { copy.epoch = nil }
        return copy
    }
}
