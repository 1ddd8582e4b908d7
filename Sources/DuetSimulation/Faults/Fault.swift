/// One of the two callers. A is the host (creates the room), B joins it.
public enum Side: Int, Sendable, CaseIterable, CustomStringConvertible {
    case a = 0
    case b = 1
    public var description: String { self == .a ? "A" : "B" }
    public var other: Side { self == .a ? .b : .a }
}

/// Signaling (WebSocket/SSE to the server) and media (the ICE path between the peers) fail separately.
public enum Plane: String, Sendable, CaseIterable {
    case signaling, media, both
    func includes(_ plane: Plane) -> Bool { self == .both || self == plane }
}

/// What can go wrong. A fault with a duration is undone when it ends; the others are instantaneous.
public enum Fault: Sendable, Equatable, CustomStringConvertible {
    /// Extra one-way delay (and jitter) on one side's links.
    case latency(Side, Plane, ms: Int64, jitterMs: Int64)
    /// Packet loss: TCP signaling retransmits (late, never lost); media consent checks suffer.
    case loss(Side, percent: Int)
    /// Nothing gets through; TCP connections stay open and deliver what was queued once it heals.
    case partition(Side, Plane)
    /// One direction of the current signaling connection is dead (the other still works).
    case halfOpen(Side, upstreamDead: Bool)
    /// The signaling connection is reset; both ends notice.
    case dropConnection(Side)
    /// A proxy refuses WebSocket upgrades (SSE still works).
    case webSocketRefused
    /// The server process dies; it restarts after the duration with its secrets but no rooms.
    case serverCrash
    /// A graceful restart: `draining`, then down for the duration, then up with no rooms.
    case serverRestart
    /// Messages from this side arrive twice and out of order (HTTP POSTs of SSE, retried requests).
    case duplicateAndReorder(Side)
    /// Wi-Fi ↔ cellular: the old socket and ICE pair are dead for good; offline for `offlineMs` first.
    case networkChange(Side, offlineMs: Int64)
    /// The app is suspended: nothing runs on that side, then everything due runs at once.
    case freeze(Side)
    /// The server's wall clock jumps (tokens, evictions).
    case serverClockJump(ms: Int64)
    /// The app's process dies (no goodbye) and is relaunched a second later with the seat it had kept.
    case processRestart(Side)
    /// Someone opens an SSE stream with this side's session id and tries to join without its token.
    case sidHijack(Side)
    /// Someone replays this side's reconnect token from another connection.
    case tokenReplay(Side)
    /// The next `join` this side sends is lost on its way (a proxy dropped it).
    case loseNextJoin(Side)
    /// Adversarial: the first offer this side ever received is delivered to it again (a replaying proxy).
    case replayFirstOffer(Side)
    /// A server in the middle: every offer and answer it relays has its DTLS fingerprints rewritten (issue 19).
    case tamperFingerprints
    /// Media to this side stops while both ICE agents stay `connected` (issue 32: a mixed-browser ICE restart left
    /// one side sending to a port the other no longer reads), until new ICE credentials on either side replace the
    /// pair. Only the receiver's inbound counters show it.
    case mediaStall(Side)
    /// This side's peer connection refuses every remote description and rollback from now on, until it is closed
    /// (issue 32: Chromium refused a restart answer whose DTLS role Firefox had flipped, then its rollback and every
    /// later description the same way). Offers are still made. It matters at the next negotiation.
    case peerConnectionWedged(Side)
    /// This side's peer connection sends no media from now on, while it goes on receiving and answering ICE, until it
    /// is closed (issue 51: Firefox's transmit pipelines after an ICE restart whose new stream failed; every later
    /// restart connects and none brings them back). Only the other side's inbound counters show it.
    case silentSender(Side)

    public var description: String {
        switch self {
        case .latency(let side, let plane, let ms, let jitter): "latency \(side) \(plane.rawValue) +\(ms)±\(jitter)ms"
        case .loss(let side, let percent): "loss \(side) \(percent)%"
        case .partition(let side, let plane): "partition \(side) \(plane.rawValue)"
        case .halfOpen(let side, let up): "half-open \(side) (\(up ? "client→server" : "server→client") dead)"
        case .dropConnection(let side): "drop signaling connection of \(side)"
        case .webSocketRefused: "WebSocket refused"
        case .serverCrash: "server crash"
        case .serverRestart: "server graceful restart"
        case .duplicateAndReorder(let side): "duplicate+reorder from \(side)"
        case .networkChange(let side, let offline): "network change \(side) (offline \(offline)ms)"
        case .freeze(let side): "freeze \(side)"
        case .serverClockJump(let ms): "server clock jump \(ms > 0 ? "+" : "")\(ms)ms"
        case .processRestart(let side): "process of \(side) killed and relaunched"
        case .sidHijack(let side): "SSE session id of \(side) reused by someone else"
        case .tokenReplay(let side): "reconnect token of \(side) replayed by someone else"
        case .loseNextJoin(let side): "the next join of \(side) is lost"
        case .replayFirstOffer(let side): "the first offer \(side) received is delivered again"
        case .tamperFingerprints: "the server rewrites the DTLS fingerprints of relayed offers and answers"
        case .mediaStall(let side): "media to \(side) stops while ICE stays connected"
        case .peerConnectionWedged(let side): "the peer connection of \(side) refuses every remote description and rollback"
        case .silentSender(let side): "the peer connection of \(side) sends no media until it is replaced"
        }
    }

    var isInstantaneous: Bool {
        switch self {
        case .dropConnection, .networkChange, .serverClockJump, .processRestart, .sidHijack, .tokenReplay, .loseNextJoin, .replayFirstOffer,
            .mediaStall, .peerConnectionWedged, .silentSender:
            true
        default: false
        }
    }
}

public struct ScheduledFault: Sendable, Equatable, CustomStringConvertible {
    /// Milliseconds after the call was first established.
    public var at: Int64
    public var durationMs: Int64
    public var fault: Fault

    public init(at: Int64, durationMs: Int64 = 0, _ fault: Fault) {
        self.at = at
        // A graceful restart drains for a second before the process exits.
        self.durationMs = fault.isInstantaneous ? 0 : (fault == .serverRestart ? max(durationMs, 2_000) : durationMs)
        self.fault = fault
    }

    /// When the world is whole again: the end of the fault (an offline period counts for a network change).
    var healsAt: Int64 {
        if case .networkChange(_, let offline) = fault { return at + offline }
        if case .processRestart = fault { return at + 1_000 }
        return at + durationMs
    }

    public var description: String {
        durationMs > 0 ? "t+\(at)ms for \(durationMs)ms: \(fault)" : "t+\(at)ms: \(fault)"
    }
}
