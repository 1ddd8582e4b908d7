import DuetClient
import DuetProtocol
import DuetRooms

/// Checks the promises as the run goes: every phase and status move, every offer and ICE restart, every
/// remote description applied. The end-of-run checks (recovery, membership, leftovers) live in `Simulation`.
final class InvariantMonitor {
    weak var world: World?
    private(set) var violations: [Violation] = []
    private let mutation: Mutation
    private var lastRestartOffer: [Int64?] = [nil, nil]
    /// The previous restart does not count: its offer was rolled back, or the peer session changed.
    private var restartExempt = [true, true]
    /// Per side: the server's message bucket of its current connection, as `ProtocolLimits` defines it.
    private var messageBucket: [(connection: ObjectIdentifier?, tokens: Double, since: Int64)] = [(nil, 0, 0), (nil, 0, 0)]
    private var flooded = [false, false]
    private var mediaEverConnected = [false, false]
    private var lastMembership: [String] = ["", ""]
    /// "incarnation|cid|rid" of evicted seats and "incarnation|rid" of ended rooms (with when): a server process
    /// remembers both; a restarted one forgets them (durable room state is a later issue), so each is checked
    /// within the incarnation that saw it.
    private var evictedSeats: Set<String> = []
    private var endedRooms: [String: Int64] = [:]
    /// The slow clocks this run reached (the sweep asserts every one is reached somewhere).
    private(set) var milestones: Set<Milestone> = []

    init(mutation: Mutation) { self.mutation = mutation }

    private var now: Int64 { world?.scheduler.now ?? 0 }

    func fail(_ invariant: Violation.Invariant, _ side: Side?, _ detail: String) {
        let violation = Violation(at: now, invariant: invariant, detail: (side.map { "\($0): " } ?? "") + detail)
        violations.append(violation)
        world?.trace(side, "VIOLATION \(violation.invariant.rawValue): \(detail)")
    }

    func phaseChanged(_ side: Side, from: CallPhase, to: CallPhase, userLeft: Bool) {
        if !TransitionRules.isLegal(from, to) { fail(.illegalPhaseTransition, side, "\(from) → \(to)") }
        if to == .ending || to == .error, !userLeft { fail(.terminalFailure, side, "\(from) → \(to) while nobody left") }
        // The first-media deadline starts over with each call.
        if to == .inCall { mediaEverConnected[side.rawValue] = world?.media.isConnected(side) ?? false }
    }

    func statusChanged(_ side: Side, from: ConnectionStatus, to: ConnectionStatus) {
        if !TransitionRules.isLegal(from, to, mediaEverConnected: mediaEverConnected[side.rawValue]) {
            fail(.illegalStatusTransition, side, "\(from) → \(to)")
        }
    }

    func iceConnected(_ side: Side) { mediaEverConnected[side.rawValue] = true }

    func reached(_ milestone: Milestone) { milestones.insert(milestone) }

    /// What the server's room logic reports happened.
    func serverEvent(_ event: SignalingCore.Event, incarnation: Int) {
        switch event {
        case .left(let rid, let cid, let reason) where reason == "evicted":
            evictedSeats.insert("\(cid)|\(rid)")
            reached(.eviction)
        case .roomEnded(let rid):
            endedRooms[rid] = now
        case .joined(let rid, let cid, let kind):
            if endedRooms[rid] != nil {
                fail(.endedRoomReappeared, nil, "\(cid) seated (\(kind.rawValue)) in \(rid.prefix(8))… after its host ended it")
            }
            if kind != .fresh, evictedSeats.contains("\(cid)|\(rid)") {
                fail(.evictedSeatResurrected, nil, "\(cid) \(kind.rawValue) into the seat evicted from \(rid.prefix(8))…")
            }
        default:
            break
        }
    }

    /// What the server tells a client: notes the slow clocks a refusal or a refresh shows were reached.
    func serverSends(_ envelope: Envelope, to side: Side) {
        switch envelope.messageType {
        case .reconnectTokenRefreshed?:
            reached(.reconnectTokenRefreshed)
        case .error?:
            let code = envelope.payload["code"].flatMap { if case .string(let s) = $0 { s } else { nil } }
            let message = envelope.payload["message"].flatMap { if case .string(let s) = $0 { s } else { nil } } ?? ""
            if code == ErrorCode.invalidReconnectToken.rawValue, message.contains("expired") { reached(.reconnectTokenExpired) }
            if code == ErrorCode.roomEnded.rawValue, let rid = envelope.rid,
                let endedAt = endedRooms[rid],
                now - endedAt > SignalingCore.Settings().tombstoneMs
            {
                reached(.roomEndedAfterTombstone)
            }
        default:
            break
        }
    }

    func iceRestartOffer(_ side: Side) {
        let index = side.rawValue
        if let last = lastRestartOffer[index], !restartExempt[index], now - last < ResilienceConstants.ICE_RESTART_COOLDOWN_MS {
            fail(
                .iceRestartCooldown, side,
                "restart offers \(now - last) ms apart (cooldown \(ResilienceConstants.ICE_RESTART_COOLDOWN_MS) ms)")
        }
        lastRestartOffer[index] = now
        restartExempt[index] = false
    }

    /// A client sent a signaling message on `connection`: it must keep inside the server's message bucket for one
    /// connection (`ProtocolLimits.messageBurst`, then `messagesPerSecond`), or a real server refuses it
    /// `RATE_LIMITED` and closes it. A runtime that loops without a delay (a restart with no cooldown answering itself)
    /// floods long before any other promise breaks.
    func sent(_ side: Side, on connection: ObjectIdentifier) {
        let index = side.rawValue
        if messageBucket[index].connection != connection {
            messageBucket[index] = (connection, ProtocolLimits.messageBurst, now)
        }
        var bucket = messageBucket[index]
        bucket.tokens =
            min(
                ProtocolLimits.messageBurst, bucket.tokens + Double(now - bucket.since) * ProtocolLimits.messagesPerSecond / 1_000) - 1
        bucket.since = now
        messageBucket[index] = bucket
        if bucket.tokens < 0, !flooded[index] {
            flooded[index] = true
            fail(
                .messageFlood, side,
                "sent faster than one connection may (\(Int(ProtocolLimits.messageBurst)) at once, then \(Int(ProtocolLimits.messagesPerSecond)) a second)"
            )
        }
    }

    func offerRolledBack(_ side: Side) { restartExempt[side.rawValue] = true }

    /// A relaunched process starts with no memory of its cooldown, and no media ever connected.
    func processRestarted(_ side: Side) {
        restartExempt[side.rawValue] = true
        mediaEverConnected[side.rawValue] = false
    }

    func membership(_ side: Side, participants: [String], host: String) {
        let key = participants.sorted().joined(separator: ",") + "|" + host
        if key != lastMembership[side.rawValue] { restartExempt[side.rawValue] = true }
        lastMembership[side.rawValue] = key
    }

    func staleApplied(_ side: Side, _ detail: String) { fail(.staleEpochApplied, side, detail) }

    func webRtcRefused(_ side: Side, _ detail: String) {
        world?.trace(side, "WebRTC refused: \(detail)")
        fail(detail.contains("an offer is already outstanding") ? .offerOutstanding : .illegalWebRtcCall, side, detail)
    }
}
