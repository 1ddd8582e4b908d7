import Testing

@testable import DuetClient

/// Seed 001: connected / recovering / retrying, the 10 s threshold, and escalation without end.
@Suite struct ConnectionStatusMachineTests {
    typealias Machine = ConnectionStatusMachine

    func inCall() -> Driven<Machine, Machine.Action> {
        var driven = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        driven.send { $0.handle(.phaseChanged(.inCall)) }
        driven.send { $0.handle(.ice(.connected)) }
        return driven
    }

    @Test(
        "connected → recovering on ICE disconnected, failed, signaling drop or network change",
        arguments: [
            Machine.Event.ice(.disconnected), .ice(.failed), .signaling(up: false), .networkChanged,
        ])
    func degrades(event: Machine.Event) {
        var call = inCall()
        let actions = call.send { $0.handle(event) }
        #expect(actions.contains(.statusChanged(.recovering)))
        #expect(call.machine.status == .recovering)
    }

    @Test("recovering → retrying at 10 s, not at 9.999 s") func retryingThreshold() {
        var call = inCall()
        call.send { $0.handle(.ice(.disconnected)) }
        call.advance(by: 9_999)
        #expect(call.machine.status == .recovering)
        let actions = call.advance(by: 1)
        #expect(call.machine.status == .retrying)
        #expect(actions.first == .statusChanged(.retrying))
        #expect(actions.contains(.escalate(.iceRestart)))
    }

    @Test("a call whose media never connects escalates at 10 s, not at 9.999 s") func mediaThatNeverConnects() {
        var driven = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        let entering = driven.send { $0.handle(.phaseChanged(.inCall)) }
        #expect(entering.contains(.timer(.schedule(.retryingThreshold, afterMs: ResilienceConstants.CONNECTION_RETRYING_THRESHOLD_MS))))
        #expect(driven.machine.status == .connected, "nothing was lost: not recovering")
        driven.send { $0.handle(.ice(.pending)) }
        driven.advance(by: 9_999)
        #expect(driven.machine.status == .connected)
        let actions = driven.advance(by: 1)
        #expect(driven.machine.status == .retrying)
        #expect(actions.contains(.escalate(.iceRestart)))
        driven.send { $0.handle(.ice(.connected)) }
        #expect(driven.machine.status == .connected)
    }

    @Test("media that connects in time cancels the first-media deadline") func mediaConnectsInTime() {
        var driven = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        driven.send { $0.handle(.phaseChanged(.inCall)) }
        driven.advance(by: 3_000)
        #expect(driven.send { $0.handle(.ice(.connected)) } == [.timer(.cancel(.retryingThreshold))])
        #expect(driven.advance(by: 60_000) == [])
        #expect(driven.machine.status == .connected)
    }

    @Test("recovering → connected when ICE and signaling are both back") func recoveringToConnected() {
        var call = inCall()
        call.send { $0.handle(.signaling(up: false)) }
        call.send { $0.handle(.ice(.disconnected)) }
        #expect(call.send { $0.handle(.signaling(up: true)) } == [], "ICE still down: not connected")
        #expect(call.send { $0.handle(.ice(.connected)) }.contains(.statusChanged(.connected)))
        #expect(!call.isScheduled(.retryingThreshold))
        call.advance(by: 60_000)
        #expect(call.machine.status == .connected)
    }

    @Test("retrying → connected when any attempt succeeds") func retryingToConnected() {
        var call = inCall()
        call.send { $0.handle(.ice(.failed)) }
        call.advance(by: 10_000)
        #expect(call.send { $0.handle(.ice(.connected)) }.contains(.statusChanged(.connected)))
        #expect(!call.isScheduled(.retryEscalation))
    }

    /// The escalation steps and when they came, over `seconds`.
    func escalations(_ call: inout Driven<Machine, Machine.Action>, seconds: Int64) -> (steps: [EscalationStep], times: [Int64]) {
        var steps: [EscalationStep] = []
        var times: [Int64] = []
        for elapsed in stride(from: Int64(1_000), through: seconds * 1_000, by: 1_000) {
            for case .escalate(let step) in call.advance(by: 1_000) {
                steps.append(step)
                times.append(elapsed)
            }
        }
        return (steps, times)
    }

    @Test("a media-only failure never closes the healthy transport: the cycle skips transportFallback while signaling is up")
    func mediaOnlyEscalationKeepsTheTransport() {
        var call = inCall()
        call.send { $0.handle(.ice(.failed)) }
        let (steps, times) = escalations(&call, seconds: 600)
        #expect(Array(steps.prefix(7)) == [.iceRestart, .offerResend, .rejoin, .iceRestart, .offerResend, .rejoin, .iceRestart])
        #expect(!steps.contains(.transportFallback), "a working transport was closed for a media failure")
        // Pauses 1, 2, 4, 8 s: the skipped turn does not double the pause (it was 16 s after the rejoin).
        #expect(Array(times.prefix(5)) == [10_000, 11_000, 13_000, 17_000, 25_000])
        // Signaling drops too: the transport is no longer healthy, and falling back is back in the cycle.
        call.send { $0.handle(.signaling(up: false)) }
        #expect(escalations(&call, seconds: 120).steps.contains(.transportFallback))
    }

    @Test("retrying escalates forever: ICE restart → offer resend → rejoin → transport fallback → repeat, with growing pauses")
    func escalationCycle() {
        var call = inCall()
        call.send { $0.handle(.signaling(up: false)) }
        var steps: [EscalationStep] = []
        var times: [Int64] = []
        var elapsed: Int64 = 0
        for _ in 0..<4_000 {  // well past an hour, 1 s at a time
            let actions = call.advance(by: 1_000)
            elapsed += 1_000
            for case .escalate(let step) in actions {
                steps.append(step)
                times.append(elapsed)
            }
        }
        #expect(
            Array(steps.prefix(8)) == [
                .iceRestart, .offerResend, .rejoin, .transportFallback, .iceRestart, .offerResend, .rejoin, .transportFallback,
            ])
        #expect(times.prefix(6) == [10_000, 11_000, 13_000, 17_000, 25_000, 41_000], "1 s, 2 s, 4 s, 8 s, 16 s pauses")
        #expect(times.last! > 3_900_000, "still escalating after an hour: there is no failed state")
        #expect(call.machine.status == .retrying)
    }

    @Test("retrying → idle: leaving the call stops everything") func leaveFromRetrying() {
        var call = inCall()
        call.send { $0.handle(.ice(.failed)) }
        call.advance(by: 12_000)
        let actions = call.send { $0.handle(.phaseChanged(.ending)) }
        #expect(actions.contains(.statusChanged(.connected)))
        #expect(call.deadlines.isEmpty)
        #expect(call.advance(by: 100_000).isEmpty)
    }

    @Test("the peer away: its media's loss is not ours — no recovering, no escalation; ICE judged again when it is back")
    func peerAwayIsTheirTrouble() {
        var call = inCall()
        call.send { $0.handle(.peerSuspended(true)) }
        for event: Machine.Event in [.ice(.disconnected), .ice(.failed), .networkChanged] {
            #expect(call.send { $0.handle(event) } == [], "\(event)")
        }
        #expect(call.advance(by: 60_000).isEmpty, "nothing escalates towards a peer that cannot answer")
        #expect(call.machine.status == .connected)
        // Back with ICE still down: recovering now, retrying 10 s later.
        #expect(call.send { $0.handle(.peerSuspended(false)) }.contains(.statusChanged(.recovering)))
        call.advance(by: ResilienceConstants.CONNECTION_RETRYING_THRESHOLD_MS)
        #expect(call.machine.status == .retrying)
    }

    @Test("the peer going away ends an ICE-only recovery, never one of our own signaling")
    func suspensionEndsOnlyTheirTrouble() {
        var ours = inCall()
        ours.send { $0.handle(.signaling(up: false)) }
        #expect(ours.send { $0.handle(.peerSuspended(true)) } == [])
        #expect(ours.machine.status == .recovering)
        #expect(
            ours.send { $0.handle(.signaling(up: true)) }.contains(.statusChanged(.connected)), "our link back is enough while it is away")

        var theirs = inCall()
        theirs.send { $0.handle(.ice(.disconnected)) }
        theirs.advance(by: 12_000)
        #expect(theirs.machine.status == .retrying)
        #expect(theirs.send { $0.handle(.peerSuspended(true)) }.contains(.statusChanged(.connected)))
        #expect(theirs.deadlines.isEmpty, "the escalation stopped")
    }

    @Test("a call entered with the peer away waits for it; back with media not up (a new connection checking), it recovers")
    func enteredWithThePeerAway() {
        var driven = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        driven.send { $0.handle(.peerSuspended(true)) }
        driven.send { $0.handle(.phaseChanged(.inCall)) }
        #expect(driven.advance(by: 60_000).isEmpty)
        #expect(driven.send { $0.handle(.peerSuspended(false)) }.contains(.statusChanged(.recovering)))
        #expect(driven.advance(by: ResilienceConstants.CONNECTION_RETRYING_THRESHOLD_MS).contains(.statusChanged(.retrying)))
    }

    @Test("only an InCall phase drives the status") func inactiveOutsideInCall() {
        var waiting = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        waiting.send { $0.handle(.phaseChanged(.waiting)) }
        #expect(waiting.send { $0.handle(.ice(.failed)) } == [])
        #expect(waiting.send { $0.handle(.signaling(up: false)) } == [])
        #expect(waiting.machine.status == .connected)
    }
}
