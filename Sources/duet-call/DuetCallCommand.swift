import ArgumentParser
import DuetClient
import DuetGStreamer
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
            not be joined (invalid room, full, ended, timed out), 4 the room ended during the call, 64 bad arguments.
            """)

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

        var configuration = DuetCall.Configuration(server: target.server)
        configuration.relayOnly = relay
        configuration.linkKey = target.key
        configuration.engine.sseOnly = sseOnly
        configuration.engine.device = "duet-call"
        // webrtcbin cannot restart ICE in place: the host restarts, this side answers on its session.
        configuration.engine.restartsOnlyAsHost = true
        let call = DuetCall(configuration: configuration, engine: media)

        let leaving = LeaveRequest()
        let signals = Self.onTerminationSignal { leaving.request(); Task { await call.leave() } }
        if let duration {
            Task {
                try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
                leaving.request()
                await call.leave()
            }
        }

        await call.join(roomId: target.roomId)
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
                code = intercepted ? ExitCodes.intercepted : leaving.requested ? ExitCodes.left : replaced ? ExitCodes.replaced : ExitCodes.roomEnded
                break
            }
        }
        log.summary(await call.qualitySummary)
        await call.shutdown()
        await media.close()
        signals.forEach { $0.cancel() }
        if isatty(STDERR_FILENO) == 1 { FileHandle.standardError.write(Data("\n".utf8)) }
        if intercepted {
            FileHandle.standardError.write(Data("""
                duet call: this call may be intercepted. The other side's connection details did not match the link's key, \
                so the call was ended. Do not retry on this server: get a new link to the other person another way.

                """.utf8))
        }
        if code != ExitCodes.left { throw ExitCode(code) }
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

/// Set once a leave was asked for, so the end of the call can be told apart from the room ending.
final class LeaveRequest: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func request() { lock.withLock { flag = true } }
    var requested: Bool { lock.withLock { flag } }
}
