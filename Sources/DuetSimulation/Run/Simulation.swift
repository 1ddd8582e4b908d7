import DuetClient
import DuetProtocol

/// One run: A creates a room, B joins, the call is established, the faults play, the world heals, both
/// must come back within `RecoveryBound.ms(for:)` and stay, then the call ends and nothing may remain.
public enum Simulation {
    public enum Ending: String, Sendable, CaseIterable {
        /// B leaves, then A.
        case guestLeavesFirst
        /// A leaves, then B.
        case hostLeavesFirst
        /// A ends the room for both.
        case hostEnds
        /// The guest's network goes away for 7 to 30 minutes and the host ends the room meanwhile: when the
        /// guest comes back (after the tombstone, perhaps after its token) it must be told the call is over,
        /// and the room must not come back.
        case hostEndsWhileGuestAway

        /// The endings drawn for every seed; the long absence is drawn for one seed in `longAbsenceOneIn`.
        static let usual: [Ending] = [.guestLeavesFirst, .hostLeavesFirst, .hostEnds]
        static let longAbsenceOneIn = 40
        var hostEndsTheRoom: Bool { self == .hostEnds || self == .hostEndsWhileGuestAway }
    }

    /// A user action at a time after the call was established.
    public struct Action: Sendable {
        public enum Kind: Sendable { case leave, end, rejoin }
        public var at: Int64
        public var side: Side
        public var kind: Kind
        public init(at: Int64, _ side: Side, _ kind: Kind) {
            self.at = at
            self.side = side
            self.kind = kind
        }
    }

    public struct Options: Sendable {
        public var seed: UInt64
        public var mutation: Mutation = .none
        /// Nil: drawn from the seed.
        public var faults: [ScheduledFault]?
        /// Faults that start with the first join instead of once the call is established.
        public var faultsFromStart = false
        public var sseOnly: [Side: Bool]?
        public var ending: Ending?
        public var actions: [Action] = []
        /// False when the scenario ends the call itself (its actions leave).
        public var expectsRecovery = true
        public var fullTrace = false
        /// Keep every engine's inputs and outputs (`Result.engineTraces`) for the differential replay.
        public var recordEngineTraces = false
        /// This side is `duet call` (webrtcbin, host-only restarts) instead of a browser.
        public var duetCallSide: Side?
        /// Both sides have a call link with a key (issue 19: descriptions signed and checked). Nil: every other pair
        /// of seeds (`keyedLink(forSeed:)`), so the sweep covers both kinds of link.
        public var keyedLink: Bool?
        public init(seed: UInt64) { self.seed = seed }
    }

    public struct Result: Sendable {
        public var seed: UInt64
        public var faults: [ScheduledFault]
        public var violations: [Violation]
        /// From the last fault's heal to both sides back (nil: not measured or not recovered).
        public var recoveryMs: Int64?
        public var establishedAt: Int64?
        public var trace: [String]
        public var events: [Side: [(at: Int64, event: CallEvent)]]
        public var eventsRun: Int
        /// The slow clocks this run reached (eviction, token and TURN expiry, …).
        public var milestones: Set<Milestone>
        /// With `Options.recordEngineTraces`: each engine of the run, in the order they were made.
        public var engineTraces: [EngineTrace] = []
        public var passed: Bool { violations.isEmpty }
    }

    /// The side `duet call` plays in a duet-call sweep: the host on even seeds, the guest on odd ones.
    public static func duetCallSide(forSeed seed: UInt64) -> Side { seed % 2 == 0 ? .a : .b }

    /// Not drawn (every draw of a seed stays what it was): seeds 2–3, 6–7, … are keyed.
    public static func keyedLink(forSeed seed: UInt64) -> Bool { (seed >> 1) & 1 == 1 }

    public static func run(_ options: Options) -> Result {
        var draw = SplitMix64(seed: options.seed)
        // Drawn even when given, so that the rest of the run stays the seed's own.
        let drawn = FaultSchedule.random(&draw)
        // Not with `duet call` on one side: a browser's silent sender in a call with webrtcbin is not mended (webrtcbin
        // does not renew for a stall, and a browser does not renew for webrtcbin's new session: 26 of 1,000 seeds of
        // the duet-call sweep never healed with it drawn). A known gap, docs/call-engine.md.
        let faults =
            options.faults
            ?? (options.duetCallSide == nil
                ? drawn
                : drawn.filter {
                    if case .silentSender = $0.fault { false } else { true }
                })
        let sse = options.sseOnly ?? [.a: draw.chance(0.15), .b: draw.chance(0.15)]
        let ending =
            options.ending
            ?? (draw.below(Ending.longAbsenceOneIn) == 0 ? .hostEndsWhileGuestAway : Ending.usual[draw.below(Ending.usual.count)])
        let absenceMs = draw.range(7 * 60_000, FaultSchedule.longestLongFaultMs)
        var engineOptions: [Side: CallEngine.Options] = [:]
        for side in Side.allCases {
            var engine = CallEngine.Options()
            engine.sseOnly = sse[side] ?? false
            engine.jitterSeed = draw.next()
            engine.device = "sim-\(side)"
            engine.keyedLink = options.keyedLink ?? keyedLink(forSeed: options.seed)
            if side == options.duetCallSide {
                engine.restartsOnlyAsHost = true  // what `duet call` runs with
                engine.device = "sim-\(side)-duet-call"
            }
            engineOptions[side] = engine
        }
        let world = World(
            seed: draw.next(), options: engineOptions, mutation: options.mutation, fullTrace: options.fullTrace,
            recordEngineTraces: options.recordEngineTraces)
        if let side = options.duetCallSide { world.media.webrtcbinSides = [side] }
        for fault in faults { world.trace(nil, "schedule: \(fault)") }
        let guestDelay = draw.range(200, 3_000)
        // One side mutes at a moment inside the faults (drawn last, so every earlier draw stays the seed's own).
        let mute = MediaChange(side: draw.chance(0.5) ? .a : .b, at: draw.range(0, max(Run.faultSpan(faults), 1)))
        let run = Run(
            world: world, options: options, faults: faults, ending: ending, guestDelay: guestDelay, absenceMs: absenceMs, mute: mute)
        run.play()
        return Result(
            seed: options.seed, faults: faults, violations: world.monitor.violations, recoveryMs: run.recoveryMs,
            establishedAt: run.establishedAt, trace: world.traceLines,
            events: [.a: world.client(.a).events, .b: world.client(.b).events], eventsRun: world.scheduler.eventsRun,
            milestones: world.monitor.milestones, engineTraces: world.engineTraces)
    }
}

/// A user's mute at a time after the call was established.
struct MediaChange {
    var side: Side
    var at: Int64
}

/// The script of one run.
private final class Run {
    let world: World
    let options: Simulation.Options
    let faults: [ScheduledFault]
    let ending: Simulation.Ending
    let guestDelay: Int64
    let absenceMs: Int64
    var recoveryMs: Int64?
    var establishedAt: Int64?
    /// How long after the last fault heals the call must be whole: a silenced connection still open then adds its
    /// renewal (`RecoveryBound`). Before the heal, any silent sender in the schedule counts.
    var bound: Int64 {
        RecoveryBound.ms(
            silentSenderUnmended: silentSenderAtHeal ?? faults.contains { if case .silentSender = $0.fault { true } else { false } })
    }
    var silentSenderAtHeal: Bool?

    let mute: MediaChange

    init(
        world: World, options: Simulation.Options, faults: [ScheduledFault], ending: Simulation.Ending, guestDelay: Int64,
        absenceMs: Int64, mute: MediaChange
    ) {
        self.absenceMs = absenceMs
        self.mute = mute
        self.world = world
        self.options = options
        self.faults = faults
        self.ending = ending
        self.guestDelay = guestDelay
    }

    private var failed: Bool { !world.monitor.violations.isEmpty }

    /// Runs until `time` or until `condition` holds; stops early on a violation.
    @discardableResult
    private func run(until time: Int64, while condition: () -> Bool = { true }) -> Bool {
        var reached = false
        world.scheduler.run(until: time) {
            if failed { return false }
            if !condition() {
                reached = true
                return false
            }
            return true
        }
        return reached
    }

    func play() {
        let a = world.client(.a)
        let b = world.client(.b)
        if options.faultsFromStart { faults.forEach { world.schedule($0, from: 0) } }
        a.startNewCall()
        run(until: 20_000, while: { world.roomId == nil })
        guard let roomId = world.roomId else {
            return options.faultsFromStart ? () : world.monitor.fail(.notRecovered, .a, "no room after 20 s")
        }
        world.scheduler.after(guestDelay) { b.join(roomId) }
        let setupDeadline = world.scheduler.now + 30_000 + (options.faultsFromStart ? Self.faultSpan(faults) + bound : 0)
        guard run(until: setupDeadline, while: { !isWhole() }) || failed else {
            return world.monitor.fail(.notRecovered, nil, "the call was not established (\(describeState()))")
        }
        if failed { return }
        establishedAt = world.scheduler.now
        let base = world.scheduler.now
        if !options.faultsFromStart { faults.forEach { world.schedule($0, from: base) } }
        for action in options.actions { schedule(action, from: base) }
        world.scheduler.at(base + mute.at) { [self] in
            world.trace(mute.side, "USER mutes")
            world.client(mute.side).setMicrophone(on: false)
        }
        guard options.expectsRecovery else {
            run(until: base + Self.faultSpan(faults) + 120_000)
            return checkCleanup(afterLeaving: false)
        }

        let healedAt = (options.faultsFromStart ? 0 : base) + max(Self.faultSpan(faults), options.actions.map(\.at).max() ?? 0)
        run(until: healedAt)
        if failed { return }
        silentSenderAtHeal = world.media.silentSenderLeft
        // Whole within the bound, and whole for good (30 s): a flicker on the way (say, one side alone for a
        // moment after a server restart) is allowed inside the bound.
        var wholeSince: Int64? = isWhole() ? world.scheduler.now : nil
        run(until: healedAt + bound + Self.settleMs) {
            if isWhole() { wholeSince = wholeSince ?? world.scheduler.now } else { wholeSince = nil }
            return wholeSince.map { world.scheduler.now - $0 < Self.settleMs } ?? true
        }
        if failed { return }
        guard let since = wholeSince, since <= healedAt + bound, world.scheduler.now - since >= Self.settleMs else {
            return world.monitor.fail(
                .notRecovered, nil, "\(Describe.time(bound)) after the last fault healed: \(describeState())")
        }
        recoveryMs = max(0, since - healedAt)
        checkMembership()
        checkCredentials()
        // Whole for good means one pair of connections: an escalation or a restart that "worked" over a pair left
        // behind, with media sent where the other side no longer reads, is not a recovery (issue 51).
        if let disagreement = world.media.disagreement() {
            world.monitor.fail(.connectionsDisagree, nil, disagreement)
        }
        if failed { return }
        end()
    }

    static let settleMs: Int64 = 30_000

    static func faultSpan(_ faults: [ScheduledFault]) -> Int64 { faults.map(\.healsAt).max() ?? 0 }

    private func schedule(_ action: Simulation.Action, from base: Int64) {
        world.scheduler.at(base + action.at) { [self] in
            let client = world.client(action.side)
            world.trace(action.side, "USER \(action.kind)")
            switch action.kind {
            case .leave: client.leave()
            case .end: client.end()
            case .rejoin: if let roomId = world.roomId { client.join(roomId) }
            }
        }
    }

    // MARK: - Whole

    /// Both in the call, connected, signaling on a live socket, media on a live path, same room view.
    private func isWhole() -> Bool {
        Side.allCases.allSatisfy { side in
            let client = world.client(side)
            return client.phase == .inCall && client.status == .connected && client.transport != nil
                && world.connectionIsLive(side) && world.media.isHealthy(side)
                // Each shows what the other said of its microphone and camera (a mute during the faults included).
                && client.remoteMedia == world.client(side.other).localMedia
        }
    }

    private func describeState() -> String {
        Side.allCases.map { side in
            let client = world.client(side)
            return "\(side): \(client.phase)/\(client.status) transport \(client.transport.map { "\($0)" } ?? "none")"
                + "\(world.connectionIsLive(side) ? "" : " (dead socket)") ICE \(world.media.ice(side).map { "\($0)" } ?? "none")"
        }.joined(separator: "; ")
    }

    private func checkMembership() {
        let a = world.client(.a).engine
        let b = world.client(.b).engine
        let server = world.server.core.roomView(world.roomId ?? "")
        let viewA = Set(a.participants.map(\.cid))
        let viewB = Set(b.participants.map(\.cid))
        if viewA != viewB || a.hostCid != b.hostCid || server.map({ Set($0.cids) != viewA || $0.host != a.hostCid }) ?? true {
            world.monitor.fail(
                .membershipDisagreement, nil,
                "A sees \(viewA.sorted()) host \(a.hostCid ?? "-"), B sees \(viewB.sorted()) host \(b.hostCid ?? "-"), server has \(server.map { "\($0.cids) host \($0.host)" } ?? "no room")"
            )
        }
    }

    /// After 30 s back in the call, both sides hold a reconnect token the server takes and TURN credentials that
    /// have not run out: a long outage may have outlived both, and the engine must have renewed them.
    private func checkCredentials() {
        for side in Side.allCases {
            let client = world.client(side)
            let engine = client.engine
            if let token = engine.reconnectToken, let cid = engine.cid, let rid = engine.roomId,
                !world.server.acceptsReconnectToken(token, cid: cid, rid: rid, nowMs: world.serverNowMs)
            {
                world.monitor.fail(.staleCredentials, side, "the server no longer takes its reconnect token")
            }
            if let expiry = client.turnExpiresAt, expiry <= world.scheduler.now {
                world.monitor.fail(
                    .staleCredentials, side, "its TURN credentials expired \(Describe.time(world.scheduler.now - expiry)) ago")
            }
        }
    }

    // MARK: - The end

    private func end() {
        let a = world.client(.a)
        let b = world.client(.b)
        switch ending {
        case .hostEndsWhileGuestAway:
            let host = b.engine.cid != nil && b.engine.cid == b.engine.hostCid ? b : a
            let guest = host === a ? b : a
            let away = ScheduledFault(at: 0, durationMs: absenceMs, .partition(guest.side, .both))
            world.trace(nil, "schedule: \(away) (the host ends the room meanwhile)")
            world.schedule(away, from: world.scheduler.now)
            world.scheduler.after(60_000) { host.end() }
            run(until: world.scheduler.now + absenceMs + bound)
            if !failed, guest.phase != .idle {
                world.monitor.fail(
                    .notRecovered, guest.side, "back from \(Describe.time(absenceMs)) away, not told the room ended (\(describeState()))")
            }
            return checkCleanup(afterLeaving: true)
        case .guestLeavesFirst:
            b.leave()
            world.scheduler.after(5_000) { a.leave() }
        case .hostLeavesFirst:
            a.leave()
            world.scheduler.after(5_000) { b.leave() }
        case .hostEnds:
            // The host may have moved (after a server restart the first to come back hosts).
            (b.engine.cid != nil && b.engine.cid == b.engine.hostCid ? b : a).end()
        }
        run(until: world.scheduler.now + 30_000)
        checkCleanup(afterLeaving: true)
    }

    private func checkCleanup(afterLeaving: Bool) {
        for side in Side.allCases {
            let client = world.client(side)
            guard client.userLeft || ending.hostEndsTheRoom || !afterLeaving else { continue }
            guard client.phase == .idle || client.phase == .error else { continue }
            let left = client.leftovers
            if !left.isEmpty { world.monitor.fail(.leftovers, side, left.joined(separator: ", ")) }
        }
        if afterLeaving {
            if let roomId = world.roomId, world.server.core.occupancy(of: roomId) > 0 {
                world.monitor.fail(.leftovers, nil, "the server still seats \(world.server.core.occupancy(of: roomId)) in the room")
            }
            if world.server.core.connectionCount > 0 {
                let open = world.connections.values.filter { $0.serverOpen && $0.serverIncarnation == world.server.incarnation }
                    .map { "#\($0.id) \($0.side) \($0.kind)\($0.clientOpen ? " (client end open)" : "")" }.sorted()
                world.monitor.fail(
                    .leftovers, nil,
                    "the server still holds \(world.server.core.connectionCount) connection(s): \(open.joined(separator: ", "))")
            }
            for side in Side.allCases where world.client(side).phase != .idle {
                world.monitor.fail(.leftovers, side, "phase \(world.client(side).phase) 30 s after leaving")
            }
        }
    }
}
