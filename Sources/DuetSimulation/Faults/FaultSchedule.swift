import DuetClient

/// A seed's faults: a few overlapping faults in the first minute and a half of the call, each at most
/// two minutes long; and in one seed of `longFaultOneIn`, one long fault of up to 30 minutes, so that the
/// slow clocks are reached too: eviction of a suspended seat (10 min), reconnect-token expiry (20 min without
/// a refresh), TURN credential expiry (the simulated credentials live 10 min) and a server down for longer
/// than any token.
public enum FaultSchedule {
    public static let windowMs: Int64 = 90_000
    public static let longestFaultMs: Int64 = 120_000
    public static let longFaultOneIn = 12
    public static let longestLongFaultMs: Int64 = 30 * 60_000
    /// One seed in this many has a media stall (`Fault.mediaStall`) on top of its faults.
    public static let mediaStallOneIn = 6
    /// One seed in this many has a wedged peer connection (`Fault.peerConnectionWedged`) on top of its faults.
    public static let peerConnectionWedgedOneIn = 6
    /// One seed in this many has a sender that goes silent for good (`Fault.silentSender`, Firefox's, issue 51).
    public static let silentSenderOneIn = 8

    public static func random(_ rng: inout SplitMix64) -> [ScheduledFault] {
        let count = 1 + rng.below(5)
        var faults = (0..<count).map { _ in randomFault(&rng) }
        if rng.below(longFaultOneIn) == 0 { faults.append(longFault(&rng)) }
        // Drawn from a copy, so that every other draw of a seed (its faults, its jitter) stays what it was.
        var stallDraw = rng
        if stallDraw.below(mediaStallOneIn) == 0 {
            faults.append(ScheduledFault(at: stallDraw.range(0, windowMs), .mediaStall(stallDraw.below(2) == 0 ? .a : .b)))
        }
        // From a copy too, past the stall's three draws (so the two are independent).
        var wedgeDraw = rng
        for _ in 0..<3 { _ = wedgeDraw.next() }
        if wedgeDraw.below(peerConnectionWedgedOneIn) == 0 {
            faults.append(ScheduledFault(at: wedgeDraw.range(0, windowMs), .peerConnectionWedged(wedgeDraw.below(2) == 0 ? .a : .b)))
        }
        // From a copy too, past the stall's and the wedge's draws.
        var silentDraw = rng
        for _ in 0..<6 { _ = silentDraw.next() }
        if silentDraw.below(silentSenderOneIn) == 0 {
            faults.append(ScheduledFault(at: silentDraw.range(0, windowMs), .silentSender(silentDraw.below(2) == 0 ? .a : .b)))
        }
        return faults.sorted { $0.at < $1.at }
    }

    /// Long enough to cross the server's and the tokens' clocks: 10.5 to 30 minutes.
    static func longFault(_ rng: inout SplitMix64) -> ScheduledFault {
        let at = rng.range(0, windowMs)
        let side: Side = rng.below(2) == 0 ? .a : .b
        let duration = rng.range(10 * 60_000 + 30_000, longestLongFaultMs)
        switch rng.below(5) {
        case 0, 1: return ScheduledFault(at: at, durationMs: duration, .partition(side, .both))
        case 2: return ScheduledFault(at: at, durationMs: duration, .partition(side, .media))
        case 3: return ScheduledFault(at: at, durationMs: rng.range(5 * 60_000, longestLongFaultMs), .serverCrash)
        default: return ScheduledFault(at: at, .networkChange(side, offlineMs: duration))
        }
    }

    static func randomFault(_ rng: inout SplitMix64) -> ScheduledFault {
        let at = rng.range(0, windowMs)
        let side: Side = rng.below(2) == 0 ? .a : .b
        let plane = [Plane.signaling, .media, .both][rng.below(3)]
        // Mostly short outages, sometimes long ones: the thresholds (2 s, 10 s, 24 s, 36 s) sit in between.
        let duration = [rng.range(100, 3_000), rng.range(3_000, 15_000), rng.range(15_000, 45_000), rng.range(45_000, longestFaultMs)][
            rng.weighted([4, 3, 2, 1])]
        switch rng.below(14) {
        case 0:
            return ScheduledFault(
                at: at, durationMs: duration, .latency(side, plane, ms: rng.range(50, 1_500), jitterMs: rng.range(0, 300)))
        case 1: return ScheduledFault(at: at, durationMs: duration, .loss(side, percent: [5, 20, 50][rng.below(3)]))
        case 2, 3: return ScheduledFault(at: at, durationMs: duration, .partition(side, plane))
        case 4: return ScheduledFault(at: at, durationMs: duration, .halfOpen(side, upstreamDead: rng.below(2) == 0))
        case 5: return ScheduledFault(at: at, .dropConnection(side))
        case 6: return ScheduledFault(at: at, durationMs: duration, .webSocketRefused)
        case 7: return ScheduledFault(at: at, durationMs: min(duration, 30_000), rng.below(2) == 0 ? .serverCrash : .serverRestart)
        case 8: return ScheduledFault(at: at, durationMs: duration, .duplicateAndReorder(side))
        case 9:
            return ScheduledFault(
                at: at, .networkChange(side, offlineMs: [0, rng.range(100, 5_000), rng.range(5_000, 60_000)][rng.below(3)]))
        case 10: return ScheduledFault(at: at, durationMs: duration, .freeze(side))
        case 11: return ScheduledFault(at: at, .processRestart(side))
        case 12: return ScheduledFault(at: at, rng.below(2) == 0 ? .sidHijack(side) : .tokenReplay(side))
        default: return ScheduledFault(at: at, .serverClockJump(ms: rng.range(-120_000, 120_000)))
        }
    }
}

extension SplitMix64 {
    /// 0 ..< n
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    /// lower ... upper
    mutating func range(_ lower: Int64, _ upper: Int64) -> Int64 { lower + Int64(next() % UInt64(upper - lower + 1)) }
    mutating func chance(_ probability: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < probability }
    mutating func weighted(_ weights: [Int]) -> Int {
        var pick = below(weights.reduce(0, +))
        for (index, weight) in weights.enumerated() {
            if pick < weight { return index }
            pick -= weight
        }
        return weights.count - 1
    }
}
