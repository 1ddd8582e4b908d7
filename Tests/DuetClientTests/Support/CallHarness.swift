import DuetClient
import DuetLock
import DuetProtocol
import DuetTestSupport
import Foundation
import Logging
import Testing

/// A clock that can run faster than real time: the call is set up at normal speed (a loaded CI
/// machine must not trip the 2 s connect timeout), then `setRate(20)` makes the engine's 10 s and 2 min
/// thresholds pass in a fraction of the time. Or slower: a test whose claim holds only while the machine keeps up
/// with the engine's timers (the happy path never needing a fallback) runs them at a quarter of real speed.
/// Every timer still goes through `Clock`.
final class FastClock: Clock, Sendable {
    typealias Duration = Swift.Duration
    struct Instant: InstantProtocol {
        var offset: Swift.Duration
        func advanced(by duration: Swift.Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Swift.Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let state = Mutex<(realAnchor: ContinuousClock.Instant, engineAnchor: Swift.Duration, factor: Double)>(
        (ContinuousClock.now, .zero, 1))

    var now: Instant {
        state.withLock { Instant(offset: $0.engineAnchor + (ContinuousClock.now - $0.realAnchor) * $0.factor) }
    }
    var minimumResolution: Swift.Duration { .milliseconds(1) }

    func setRate(_ factor: Double) {
        let current = now
        state.withLock { $0 = (ContinuousClock.now, current.offset, factor) }
    }

    func sleep(until deadline: Instant, tolerance: Swift.Duration?) async throws {
        // Re-checked in short steps so that a speed-up applies to timers already running.
        while true {
            let remaining = now.duration(to: deadline)
            guard remaining > .zero else { return }
            let factor = state.withLock { $0.factor }
            try await Task.sleep(for: min(remaining / factor, .milliseconds(50)))
        }
    }
}

/// One participant: a `DuetCall` on a simulated engine, with everything it emitted recorded.
final class Participant: Sendable {
    let call: DuetCall
    let engine: SimulatedWebRtcEngine
    let media: SimulatedMediaNetwork
    private let log = EventLog()
    /// What the runtime logged at `warning` and above (a WebRTC command that failed, say): a failure shows it.
    let warnings = WarningLog()
    private let reader: Task<Void, Never>

    init(
        server: TestServer, media: SimulatedMediaNetwork, name: String, clock: any Clock<Duration> = ContinuousClock(),
        sseOnly: Bool = false
    ) async {
        engine = await media.makeEngine(name: name)
        self.media = media
        var configuration = DuetCall.Configuration(server: server.baseURL)
        configuration.engine.sseOnly = sseOnly
        configuration.engine.jitterSeed = UInt64(name.hashValue & 0xffff)
        let warnings = self.warnings
        let logger = Logger(label: "duet.call.\(name)") { label in RecordingLogHandler(label: label, into: warnings) }
        call = DuetCall(configuration: configuration, engine: engine, clock: clock, logger: logger)
        let log = self.log
        let events = call.events
        reader = Task { for await event in events { await log.append(event) } }
    }

    var events: [CallEvent] { get async { await log.events } }

    func statuses() async -> [ConnectionStatus] {
        await log.events.compactMap { if case .connectionStatus(let status) = $0 { status } else { nil } }
    }

    func transports() async -> [SignalingTransport?] {
        await log.events.compactMap { if case .transport(let transport) = $0 { transport } else { nil } }
    }

    func stats() async -> SimulatedMediaNetwork.Stats { await media.stats(of: engine) }

    /// Polls until `condition` holds (real time), failing after `timeout`.
    func waitFor(_ what: String, timeout: Duration = .seconds(10), _ condition: @Sendable (Participant) async -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if await condition(self) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Stats and quality come every second (20 a second on a fast clock): leave them out, or they are all there is.
        let told = await log.events.filter { event in
            switch event {
            case .stats, .quality: false
            default: true
            }
        }
        let warned = warnings.last(10)
        throw TestFailure(
            "\(what) did not happen within \(timeout); events (without stats and quality): \(told.suffix(40)); warnings: \(warned)")
    }

    func waitInCallConnected(timeout: Duration = .seconds(10)) async throws {
        try await waitFor("InCall + connected + ICE connected", timeout: timeout) { participant in
            let phase = await participant.call.phase
            let status = await participant.call.connectionStatus
            let ice = await participant.stats().iceState
            return phase == .inCall && status == .connected && ice == .connected
        }
    }

    func framesKeepFlowing() async throws {
        let before = await stats().framesReceived
        try await waitFor("frames increase") { await $0.stats().framesReceived > before + 2 }
    }

    func finish() async {
        await call.shutdown()
        reader.cancel()
    }
}

/// A participant's warnings (the last 100) for its failure messages.
final class WarningLog: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) {
        lines.withLock { lines in
            lines.append(line)
            if lines.count > 100 { lines.removeFirst() }
        }
    }
    func last(_ count: Int) -> [String] { lines.withLock { Array($0.suffix(count)) } }
}

struct RecordingLogHandler: LogHandler {
    let label: String
    let into: WarningLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        into.append("\(label): \(event.message) \(event.metadata ?? [:])")
    }
}

actor EventLog {
    private(set) var events: [CallEvent] = []
    func append(_ event: CallEvent) { events.append(event) }
}

/// Alice creates a room, Bob joins it; both on simulated engines sharing one media network.
func startCall(server: TestServer, media: SimulatedMediaNetwork, clock: any Clock<Duration> = ContinuousClock(), sseOnly: Bool = false)
    async throws -> (Participant, Participant)
{
    let alice = await Participant(server: server, media: media, name: "alice", clock: clock, sseOnly: sseOnly)
    let bob = await Participant(server: server, media: media, name: "bob", clock: clock, sseOnly: sseOnly)
    await alice.call.startNewCall()
    try await alice.waitFor("Alice waiting") { await $0.call.phase == .waiting }
    let roomId = try #require(await alice.call.roomId)
    await bob.call.join(roomId: roomId)
    try await alice.waitInCallConnected()
    try await bob.waitInCallConnected()
    return (alice, bob)
}

/// A call set up at normal speed; then engine time runs 20× faster and the media path is cut, with ICE
/// failing 300 ms (real) after the cut.
/// The call set up, then media cut with the engines' clock at 20× real time, so the 10 s and 2 min thresholds pass
/// quickly. Only the engines' clock is fast: the server, the WebSocket and the simulated ICE take real time. So
/// before waiting for a recovery, a test slows the clock again (`clock.setRate(2)`): at 20× a loaded machine can
/// take longer than the engine's 2 s connect timeout (100 ms real) to open a WebSocket, and the recovery would keep
/// timing itself out.
func startCallThenCutMedia(server: TestServer) async throws -> (Participant, Participant, SimulatedMediaNetwork, FastClock) {
    var timing = SimulatedMediaNetwork.Timing()
    timing.failAfterCut = .milliseconds(300)
    let media = SimulatedMediaNetwork(timing: timing)
    let clock = FastClock()
    let (alice, bob) = try await startCall(server: server, media: media, clock: clock)
    clock.setRate(20)
    await media.cut()
    return (alice, bob, media, clock)
}
