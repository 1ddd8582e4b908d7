import Testing

@testable import DuetClient

/// WS first, SSE fallback, backoff, connect timeout, ping/pong (seed 000 §4 scenarios 1 and 7, §9).
@Suite struct SignalingLinkMachineTests {
    typealias Machine = SignalingLinkMachine

    func link(sse: Bool = true) -> Driven<Machine, Machine.Action> {
        Driven(Machine(sseAvailable: sse)) { machine, timer in machine.handle(.timerFired(timer)) }
    }

    func connected(_ transport: SignalingTransport = .ws) -> Driven<Machine, Machine.Action> {
        var driven = link()
        driven.send { $0.handle(.connect) }
        driven.send { $0.handle(.opened(.ws)) }
        if transport == .sse {
            driven.send { $0.handle(.forceFallback) }
            driven.send { $0.handle(.opened(.sse)) }
        }
        return driven
    }

    @Test func connectsWebSocketFirst() {
        var driven = link()
        #expect(driven.send { $0.handle(.connect) }.first == .open(.ws))
        #expect(driven.send { $0.handle(.opened(.ws)) }.contains(.up(.ws)))
        #expect(driven.machine.transport == .ws)
    }

    @Test("connect timeout fires at 2 s, not at 1.999 s; a WS timeout falls back to SSE at once")
    func connectTimeout() {
        var driven = link()
        driven.send { $0.handle(.connect) }
        #expect(driven.advance(by: 1_999).isEmpty)
        let actions = driven.advance(by: 1)
        #expect(actions.contains(.close))
        #expect(actions.contains(.open(.sse)))
        #expect(driven.machine.state == .connecting(.sse))
    }

    @Test("WS never connected → SSE fallback") func neverConnectedFallsBack() {
        var driven = link()
        driven.send { $0.handle(.connect) }
        #expect(driven.send { $0.handle(.openFailed(.ws, .error)) }.contains(.open(.sse)))
    }

    @Test("WS unsupported → SSE fallback") func unsupportedFallsBack() {
        var driven = connected()
        driven.send { $0.handle(.closed(.networkError)) }
        driven.advance(by: 500)
        #expect(driven.send { $0.handle(.openFailed(.ws, .unsupported)) }.contains(.open(.sse)))
    }

    @Test("WS that worked before reconnects on WS with backoff 500 ms → 1 s → 2 s → 4 s → 5 s cap")
    func backoffAfterDrop() {
        var driven = connected()
        driven.send { $0.handle(.closed(.closedByServer)) }
        var delays: [Int64] = []
        for _ in 0..<6 {
            let delay = driven.remaining(.reconnectBackoff)!
            delays.append(delay)
            #expect(driven.advance(by: delay - 1).isEmpty, "nothing before the backoff ends")
            #expect(driven.advance(by: 1).contains(.open(.ws)))
            driven.send { $0.handle(.openFailed(.ws, .error)) }
            // Stay on WS for this test: closed-by-server does not count toward fallback, errors do.
            if driven.machine.state == .connecting(.sse) { break }
        }
        #expect(delays.prefix(2) == [500, 1_000])
    }

    @Test("three WS failures in a row → SSE") func threeFailuresFallBack() {
        var driven = connected()
        driven.send { $0.handle(.closed(.networkError)) }  // failure 1
        driven.advance(by: 500)
        driven.send { $0.handle(.openFailed(.ws, .error)) }  // failure 2
        #expect(driven.machine.state == .waitingToReconnect(next: .ws))
        driven.advance(by: 1_000)
        let third = driven.send { $0.handle(.openFailed(.ws, .error)) }  // failure 3
        #expect(third.contains(.open(.sse)))
    }

    @Test("backoff grows to the 5 s cap and resets after a success") func backoffCapAndReset() {
        var driven = Driven(Machine(sseAvailable: false)) { machine, timer in machine.handle(.timerFired(timer)) }
        driven.send { $0.handle(.connect) }
        var delays: [Int64] = []
        for _ in 0..<7 {
            driven.send { $0.handle(.openFailed(.ws, .error)) }
            let delay = driven.remaining(.reconnectBackoff)!
            delays.append(delay)
            driven.advance(by: delay)
        }
        #expect(delays == [500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000])
        driven.send { $0.handle(.opened(.ws)) }
        driven.send { $0.handle(.closed(.networkError)) }
        #expect(driven.remaining(.reconnectBackoff) == 500)
    }

    @Test("pings every 12 s; two missed pongs (24 s of silence) force-close and reconnect")
    func pingPong() {
        var driven = connected()
        #expect(driven.advance(by: 11_999).isEmpty)
        #expect(driven.advance(by: 1) == [.sendPing, .timer(.schedule(.ping, afterMs: 12_000))])
        driven.send { $0.handle(.pong) }
        #expect(driven.advance(by: 12_000).first == .sendPing, "answered: keep pinging")
        // Now silence: first miss at the next tick, force-close at the one after.
        let firstMiss = driven.advance(by: 12_000)
        #expect(firstMiss.first == .sendPing)
        #expect(driven.advance(by: 11_999).isEmpty)
        let closing = driven.advance(by: 1)
        #expect(closing.contains(.close))
        #expect(closing.contains(.down(.pongTimeout)))
        #expect(driven.machine.state == .waitingToReconnect(next: .ws))
    }

    @Test("forced fallback (retrying escalation) switches transport") func forceFallback() {
        var driven = connected()
        let actions = driven.send { $0.handle(.forceFallback) }
        #expect(actions.contains(.open(.sse)))
        driven.send { $0.handle(.opened(.sse)) }
        #expect(driven.machine.transport == .sse)
    }

    @Test func stopClosesAndCancelsEveryTimer() {
        var driven = connected()
        driven.send { $0.handle(.stop) }
        #expect(driven.deadlines.isEmpty)
        #expect(driven.advance(by: 100_000).isEmpty)
    }

    @Test func jitterKeepsReconnectsApartButWithinTheCap() {
        var a = Machine(sseAvailable: false, jitterSeed: 1)
        var b = Machine(sseAvailable: false, jitterSeed: 2)
        _ = a.handle(.connect)
        _ = b.handle(.connect)
        let delayA = a.handle(.openFailed(.ws, .error)).compactMap {
            if case .timer(.schedule(.reconnectBackoff, let ms)) = $0 { ms } else { nil }
        }.first!
        let delayB = b.handle(.openFailed(.ws, .error)).compactMap {
            if case .timer(.schedule(.reconnectBackoff, let ms)) = $0 { ms } else { nil }
        }.first!
        #expect(delayA != delayB)
        #expect((400...600).contains(delayA) && (400...600).contains(delayB))
    }
}
