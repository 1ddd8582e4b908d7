import DuetProtocol

/// Our own ICE candidates on their way out (seed 004): cleaned of WebRTC-only extensions, held back until
/// the description they belong to is sent (the answer on the answering side, as in the seed, and our offer too), and
/// closed by end-of-candidates (`candidate:null`) when gathering completes or after 3 s without a new candidate.
/// The offer is held for the seed's reason: a candidate the peer gets before the description is dropped by some
/// receivers, and one that comes before an ICE restart's offer is matched to the generation it replaces. WebRTC can
/// report candidates before it hands the offer back (GStreamer's webrtcbin does, from its own thread: an aiortc peer
/// dropped `duet call`'s first three in CI).
public struct TrickleIceMachine: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        /// We are making an offer: candidates wait for it.
        case offering
        /// We sent an offer: candidates flow at once.
        case offerSent
        /// A remote offer arrived: we answer, so candidates wait for our answer.
        case answering
        case answerSent
        /// Our offer or answer could not be made: nothing waits any longer (what was held came before it).
        case descriptionFailed
        /// Our peer connection was replaced: what the old one gathered, held or not, is no use to anyone.
        case connectionRenewed
        case localCandidate(IceCandidate)
        case gatheringComplete
        case timerFired(TimerID)
    }

    public enum Action: Sendable, Equatable {
        case sendCandidate(IceCandidate)
        case sendEndOfCandidates
        case timer(TimerCommand)
    }

    private var holding = false
    private var queued: [IceCandidate] = []
    private var gatheringDone = false
    private var endSent = false

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .offering, .answering:
            // A new description, perhaps a new generation of candidates (gathering again, to complete again).
            holding = true
            startGeneration()
            return [.timer(.cancel(.endOfCandidates))]
        case .connectionRenewed:
            holding = false
            queued.removeAll()
            startGeneration()
            return [.timer(.cancel(.endOfCandidates))]
        case .offerSent, .answerSent, .descriptionFailed:
            holding = false
            var actions = flush()
            if gatheringDone { actions += end() }
            return actions
        case .localCandidate(let candidate):
            let cleaned = IceCandidate(
                candidate: Self.clean(candidate.candidate), sdpMid: candidate.sdpMid, sdpMLineIndex: candidate.sdpMLineIndex)
            if holding {
                queued.append(cleaned)
                return []
            }
            endSent = false
            return [
                .sendCandidate(cleaned), .timer(.schedule(.endOfCandidates, afterMs: ResilienceConstants.END_OF_CANDIDATES_TIMEOUT_MS)),
            ]
        case .gatheringComplete:
            gatheringDone = true
            return holding ? [] : end()
        case .timerFired(.endOfCandidates):
            return holding ? [] : end()
        case .timerFired:
            return []
        }
    }

    private mutating func startGeneration() {
        gatheringDone = false
        endSent = false
    }

    private mutating func flush() -> [Action] {
        guard !queued.isEmpty else { return [] }
        let candidates = queued
        queued.removeAll()
        return candidates.map { .sendCandidate($0) } + [
            .timer(.schedule(.endOfCandidates, afterMs: ResilienceConstants.END_OF_CANDIDATES_TIMEOUT_MS))
        ]
    }

    private mutating func end() -> [Action] {
        guard !endSent else { return [] }
        endSent = true
        return [.timer(.cancel(.endOfCandidates)), .sendEndOfCandidates]
    }

    /// Drops `generation`, `ufrag`, `network-id` and `network-cost` (each with its value); keeps the
    /// standard fields in order.
    public static func clean(_ candidate: String) -> String {
        let dropped: Set<Substring> = ["generation", "ufrag", "network-id", "network-cost"]
        var words = candidate.split(separator: " ", omittingEmptySubsequences: true)[...]
        var kept: [Substring] = []
        while let word = words.popFirst() {
            if dropped.contains(word) {
                _ = words.popFirst()
            } else {
                kept.append(word)
            }
        }
        return kept.joined(separator: " ")
    }
}
