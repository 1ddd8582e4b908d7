import ArgumentParser
import DuetClient
import DuetGStreamer
import DuetProtocol
import DuetVersion
import Foundation
import Logging

/// `duet-call` (also run as `duet call`): joins a call as a headless peer with a test-pattern video and a
/// tone, through DuetClient and GStreamer's webrtcbin, and reports what it receives.
@main
struct DuetCallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duet-call",
        abstract: "Join a Duet call as a headless peer with real audio and video (GStreamer webrtcbin).",
        discussion: """
            Exit codes: 0 left (Ctrl-C, SIGTERM or --duration), 1 media engine failed to start, 3 the call could \
            not be joined (invalid room, full, ended, timed out), 4 the room ended during the call, 5 replaced, \
            6 intercepted, 7 --ring declined, 8 --ring not answered, 9 --ring reached nobody, 10 --answer got no ring, \
            64 bad arguments.
            """,
        version: DuetVersion.description)

    @Argument(help: "A call link (http://host:port/call/ROOM, with #k=KEY when it has one) or a room id.")
    var link: String
    @Option(help: "Signaling server URL (default: from the link, else http://127.0.0.1:8080/).")
    var server: String?
    @Flag(help: "Send audio only (still receives video).")
    var audioOnly = false
    @Flag(help: "Relay-only ICE: media goes through the TURN server the Duet server hands out.")
    var relay = false
    @Flag(help: "Signal over SSE only (never WebSocket).")
    var sseOnly = false
    @Option(help: "Print events as JSON lines on stdout: jsonl.")
    var events: EventsFormat?
    @Option(help: "Leave after this many seconds.")
    var duration: Double?
    @Option(help: "Address the ICE agent gathers on (repeatable). Default: 127.0.0.1 when the server is on loopback, else every interface.")
    var iceAddress: [String] = []
    @Flag(help: ArgumentHelp("With --events jsonl: also each second's raw webrtcbin stats (for quality fixtures).", visibility: .hidden))
    var rawStats = false
    @Option(help: "Log level on stderr: trace|debug|info|notice|warning|error.")
    var logLevel: String = "warning"
    @Flag(help: "Ring the other person's devices once in the call alone; exit 7 declined, 8 no answer, 9 nobody to ring.")
    var ring = false
    @Option(help: "With --ring: the name the other person sees (sealed with the link's key).")
    var name: String = "duet call"
    @Flag(help: "Join once (to be a device of this call), leave, wait for a ring in it and accept it, then join the call.")
    var answer = false
    /// Taken as it comes (`.unconditional`): a base64url id may start with `-` (one random id in 32 does), which the
    /// parser would otherwise read as a flag and refuse unless written `--device-id=…`.
    @Option(parsing: .unconditional, help: "This device's id (16–64 base64url characters). Default: a new one for each run.")
    var deviceId: String?

    enum EventsFormat: String, ExpressibleByArgument { case jsonl }

    func run() async throws {
        let target: CallLink
        do { target = try CallLink(link, server: server) } catch { throw ValidationError(error.description) }
        let level = Logger.Level(rawValue: logLevel) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let log = EventLog(jsonl: events == .jsonl, rawStats: rawStats)

        let pinned = iceAddress.isEmpty && Self.isLoopback(target.server) ? ["127.0.0.1"] : iceAddress
        let media: GStreamerWebRtcEngine
        do {
            media = try GStreamerWebRtcEngine(options: .init(audioOnly: audioOnly, iceAddresses: pinned))
        } catch {
            log.note(["event": "error", "value": "MEDIA_ENGINE", "message": "\(error)"])
            FileHandle.standardError.write(Data("duet call: the media engine could not start: \(error)\n".utf8))
            throw ExitCode(ExitCodes.mediaFailed)
        }

        if ring && answer { throw ValidationError("--ring and --answer are the two ends of a ring: give one") }
        let device = deviceId ?? Self.newDeviceId()
        guard RingLimits.isValidId(device, minimum: 16) else { throw ValidationError("--device-id must be 16–64 base64url characters") }
        var configuration = DuetCall.Configuration(server: target.server)
        configuration.relayOnly = relay
        configuration.linkKey = target.key
        configuration.engine.sseOnly = sseOnly
        configuration.engine.device = "duet-call"
        configuration.deviceId = device
        configuration.quietJoin = ring
        // webrtcbin cannot restart ICE in place: the host restarts, this side answers on its session.
        configuration.engine.restartsOnlyAsHost = true
        if answer {
            switch await Self.waitForRing(target: target, configuration: configuration, device: device, log: log, duration: duration) {
            case .accepted: break
            case .exit(let code):
                await media.close()
                throw ExitCode(code)
            }
        }
        let call = DuetCall(configuration: configuration, engine: media)

        let leaving = LeaveRequest()
        let signals = Self.onTerminationSignal {
            leaving.request()
            Task { await call.leave() }
        }
        if let duration {
            Task {
                try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
                leaving.request()
                await call.leave()
            }
        }

        await call.join(roomId: target.roomId)
        let ringOutcome = RingOutcome()
        if ring { Self.ringWhenAlone(call, name: name, log: log, outcome: ringOutcome) }
        var code = ExitCodes.left
        var wasInRoom = false
        var replaced = false
        var intercepted = false
        for await event in call.events {
            log.record(event)
            if case .replaced = event { replaced = true }
            if case .verification(.intercepted) = event { intercepted = true }
            guard case .phase(let phase) = event else { continue }
            // The status machine reports changes only, and starts each call `connected`: say so, so a reader
            // of the events never has to assume a status nobody reported.
            if phase == .inCall { log.record(.connectionStatus(await call.connectionStatus)) }
            if phase == .waiting || phase == .inCall { wasInRoom = true }
            if phase == .error {
                code = ExitCodes.joinFailed
                break
            }
            if phase == .idle, wasInRoom || replaced || intercepted {
                code =
                    intercepted
                    ? ExitCodes.intercepted : leaving.requested ? ExitCodes.left : replaced ? ExitCodes.replaced : ExitCodes.roomEnded
                break
            }
        }
        if let ended = ringOutcome.code { code = ended }
        log.summary(await call.qualitySummary)
        await call.shutdown()
        await media.close()
        signals.forEach { $0.cancel() }
        // Set by scripts/sanitize.sh's leak check: what GStreamer holds for the process's life is freed, so what
        // LeakSanitizer reports at exit is only what the shim or the engine lost. Refused while a peer is still held
        // (GStreamer would be freed under it): a failure of the check, said and exited with.
        if ProcessInfo.processInfo.environment["DUET_GST_DEINIT"] == "1" {
            let alive = GStreamerWebRtcEngine.deinitializeForLeakCheck()
            if alive > 0 {
                FileHandle.standardError.write(
                    Data("duet call: \(alive) media peer(s) still held at exit: GStreamer not deinitialised\n".utf8))
                throw ExitCode(ExitCodes.mediaFailed)
            }
        }
        if isatty(STDERR_FILENO) == 1 { FileHandle.standardError.write(Data("\n".utf8)) }
        if intercepted {
            FileHandle.standardError.write(
                Data(
                    """
                    duet call: this call may be intercepted. The other side's connection details did not match the link's key, \
                    so the call was ended. Do not retry on this server: get a new link to the other person another way.

                    """.utf8))
        }
        if code != ExitCodes.left { throw ExitCode(code) }
    }

    static func newDeviceId() -> String { Base64URL.encode((0..<16).map { _ in UInt8.random(in: .min ... .max) }) }

    /// `--ring`: once this side waits alone in the call, ring; the ring's states become events; a ring that ends
    /// without an answer leaves the call with its exit code (an accepted one goes on as a call).
    static func ringWhenAlone(_ call: DuetCall, name: String, log: EventLog, outcome: RingOutcome) {
        Task {
            var last: (state: String, devices: Int)?
            for await update in call.ringUpdates {
                // The server says `ring_state` again whenever it learns something of the ring (a push delivered, a
                // page that rang, a reconnect): an event only when what it says changed.
                guard last.map({ $0 != (update.state, update.devices) }) ?? true else { continue }
                last = (update.state, update.devices)
                log.note(["event": "ring", "state": update.state, "devices": update.devices, "callId": update.callId])
                let code: Int32? =
                    switch update.state {
                    case "declined": ExitCodes.declined
                    case "no_answer": ExitCodes.noAnswer
                    case "unreachable": ExitCodes.unreachable
                    default: nil
                    }
                if let code {
                    outcome.set(code)
                    await call.leave()
                }
            }
        }
        Task {
            while await call.phase != .waiting { try? await Task.sleep(for: .milliseconds(50)) }
            try? await call.ring(callId: newDeviceId(), callerName: name)
        }
    }

    enum AnswerResult {
        case accepted
        case exit(Int32)
    }

    /// `--answer`: join once (this device is then one of the call's: its member token), leave, listen for a ring in
    /// this call, accept the first one; the call is then joined as usual.
    static func waitForRing(target: CallLink, configuration: DuetCall.Configuration, device: String, log: EventLog, duration: Double?) async
        -> AnswerResult
    {
        var quiet = configuration
        quiet.quietJoin = true  // a device checking in is not news for the room's other devices
        let probe = DuetCall(configuration: quiet, engine: NoMediaEngine())
        await probe.join(roomId: target.roomId)
        var token: String?
        for _ in 0..<300 {
            token = await probe.memberToken
            if token != nil { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        await probe.leave()
        try? await Task.sleep(for: .milliseconds(200))
        await probe.shutdown()
        guard let token else {
            log.note(["event": "error", "value": "NO_MEMBER_TOKEN", "message": "could not join the call to become one of its devices"])
            return .exit(ExitCodes.joinFailed)
        }
        let listener = RingListener(
            server: target.server, deviceId: device, calls: [.init(roomId: target.roomId, memberToken: token, key: target.key)],
            transports: configuration.engine.sseOnly ? [.sse] : [.ws, .sse])
        await listener.start()
        let deadline = duration.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        let timeout = Task {
            guard let deadline else { return }
            try? await Task.sleep(until: deadline, clock: .continuous)
            await listener.stop()
        }
        defer { timeout.cancel() }
        for await event in listener.events {
            switch event {
            case .listening:
                log.note(["event": "listening", "roomId": target.roomId])
            case .incoming(let call):
                let caller: Any =
                    switch call.caller {
                    case .verified(let name): ["verified": name]
                    case .unverified(let name): ["unverified": name.map { $0 as Any } ?? NSNull()]
                    case .altered: "altered"
                    }
                log.note(["event": "incoming", "callId": call.callId, "caller": caller])
                await listener.accept(call)
            case .ended(let call, let reason):
                log.note(["event": "ringEnded", "callId": call.callId, "reason": reason.rawValue])
                if reason == .acceptedHere {
                    await listener.stop()
                    return .accepted
                }
            }
        }
        return .exit(ExitCodes.noRing)
    }

    static func isLoopback(_ server: String) -> Bool {
        guard let host = URLComponents(string: server)?.host else { return false }
        return host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
    }

    /// Ctrl-C and SIGTERM leave the call (the peer sees a leave, not a dropped connection).
    static func onTerminationSignal(_ handler: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }
}

/// How `--ring`'s ring ended when it ended the call (declined, no answer, nobody to ring).
final class RingOutcome: @unchecked Sendable {
    // @unchecked: the only state is `value`, read and written under `lock`.
    private let lock = NSLock()
    private var value: Int32?
    func set(_ code: Int32) { lock.withLock { value = code } }
    var code: Int32? { lock.withLock { value } }
}

/// Set once a leave was asked for, so the end of the call can be told apart from the room ending.
final class LeaveRequest: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func request() { lock.withLock { flag = true } }
    var requested: Bool { lock.withLock { flag } }
}
