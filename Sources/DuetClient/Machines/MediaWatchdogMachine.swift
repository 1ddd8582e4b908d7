import DuetProtocol

/// Media that stops arriving while ICE says `connected` (issue 32). A browser that restarts ICE with a peer of
/// another make can be left sending to a port the other side no longer reads: both ICE agents stay `connected`,
/// consent freshness is answered by the old context, and nothing but the inbound counters shows the call is dead.
/// Firefox's consent check gives up long after a cut; libnice (webrtcbin) has none at all. So while ICE is connected
/// this machine has the runtime read the inbound RTP packet count every `MEDIA_SAMPLE_INTERVAL_MS`, and calls media
/// stalled when it did not grow for `MEDIA_STALL_TIMEOUT_MS`.
///
/// - Packets only, of every kind: they are the transport's evidence. A muted track still sends (silence, black
///   frames), so a mute is no stall; a frozen picture while audio flows (a backgrounded camera, a static screen) is
///   the sender's, and an ICE restart could not mend it.
/// - Only once packets have arrived on this peer connection, or the peer says it sends (a microphone, camera or
///   screen on): a peer without any is not a stall, and one that only muted still sends.
/// - Only growth ends a stall. A new baseline (ICE back to `connected` after the restart the stall caused, an applied
///   remote description, a new connection's counters) proves nothing: ICE can reconnect over a path that still
///   carries nothing. Only the call losing its peer (`reset`) forgets a stall.
public struct MediaWatchdogMachine: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        /// Whether ICE (as the engine sees it) is connected now.
        case ice(connected: Bool)
        /// Nobody to hear any more (the peer left, the call ended): a stall is forgotten.
        case reset
        /// Whether the peer says it sends anything (its `media_state`; false while unknown).
        case peerSends(Bool)
        case timerFired(TimerID)
        /// The runtime's answer to `.sample`: inbound RTP packets of the live peer connection, all kinds; nil when there
        /// is no report (no peer connection yet).
        case sampled(packets: Int64?)
        /// A remote description was applied (say, the peer's ICE restart): the path is being renegotiated, and is
        /// counted afresh — the host restarting for an outage both ICE agents saw is not this side's stall to restart.
        case renegotiated
    }

    public enum Action: Sendable, Equatable {
        /// Read the inbound packet count and feed it back as `.sampled`.
        case sample
        /// Nothing arrived for the stall timeout while ICE is connected.
        case stalled
        /// Media arrives again after a stall.
        case flowing
        case timer(TimerCommand)
    }

    public private(set) var iceConnected = false
    public private(set) var stalled = false
    private var last: Int64?
    private var quietSamples = 0
    /// Packets have arrived on this peer connection (its counters, which a new connection restarts).
    private var received = false
    private var peerSends = false

    /// Quiet samples in a row that make a stall.
    static let stallSamples = Int(
        (ResilienceConstants.MEDIA_STALL_TIMEOUT_MS + ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS - 1)
            / ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS)

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .ice(let connected):
            guard connected != iceConnected else { return [] }
            iceConnected = connected
            rebaseline()
            return connected
                ? [.timer(.schedule(.mediaSample, afterMs: ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS))]
                : [.timer(.cancel(.mediaSample))]
        case .reset:
            // What this connection carried stays known: a peer that comes back on it (a server restart rebuilt the
            // room) is judged like the one before.
            stalled = false
            rebaseline()
            return []
        case .peerSends(let sends):
            peerSends = sends
            return []
        case .timerFired(.mediaSample):
            guard iceConnected else { return [] }
            // Scheduled here, not when the sample comes back: a sample the runtime never answers stops nothing.
            return [.sample, .timer(.schedule(.mediaSample, afterMs: ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS))]
        case .timerFired:
            return []
        case .renegotiated:
            if iceConnected { rebaseline() }
            return []
        case .sampled(let packets):
            guard iceConnected, let packets else { return [] }
            guard let previous = last, packets >= previous else {
                // The first on this path, or a new peer connection's counters (which have carried nothing yet).
                if let previous = last, packets < previous { received = false }
                last = packets
                return []
            }
            last = packets
            if packets > previous {
                received = true
                quietSamples = 0
                guard stalled else { return [] }
                stalled = false
                return [.flowing]
            }
            quietSamples += 1
            guard received || peerSends, !stalled, quietSamples >= Self.stallSamples else { return [] }
            stalled = true
            return [.stalled]
        }
    }

    private mutating func rebaseline() {
        last = nil
        quietSamples = 0
    }
}
