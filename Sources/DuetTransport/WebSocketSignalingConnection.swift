import DuetProtocol
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOWebSocket

/// Signaling over `GET /ws`, on swift-websocket's client. Answers the server's ping frames
/// automatically; application-level ping/pong is the engine's business.
public final class WebSocketSignalingConnection: SignalingConnection {
    public let kind = SignalingTransportKind.ws
    public let events: AsyncStream<SignalingEvent>
    private let commands: AsyncStream<Command>.Continuation
    private let task: Task<Void, Never>
    private let closedByClient: SharedFlag

    enum Command: Sendable {
        case send(String)
        case close
    }

    private init(
        events: AsyncStream<SignalingEvent>, commands: AsyncStream<Command>.Continuation, task: Task<Void, Never>,
        closedByClient: SharedFlag
    ) {
        self.events = events
        self.commands = commands
        self.task = task
        self.closedByClient = closedByClient
    }

    /// Opens the socket; throws if it is not open within `timeout`.
    public static func connect(
        url: String, timeout: Duration, headers: HTTPFields = [:], logger: Logger = Logger(label: "duet.ws")
    ) async throws(SignalingConnectError) -> WebSocketSignalingConnection {
        let (events, eventSink) = AsyncStream<SignalingEvent>.makeStream()
        let (commandStream, commands) = AsyncStream<Command>.makeStream()
        let opened = OneShot<Result<Void, SignalingConnectError>>()
        let closedByClient = SharedFlag()
        let task = Task {
            do {
                let closeFrame = try await WebSocketClient.connect(
                    url: url,
                    configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers),
                    logger: logger
                ) { inbound, outbound, _ in
                    opened.fulfil(.success(()))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await command in commandStream {
                                switch command {
                                case .send(let text): try await outbound.write(.text(text))
                                case .close:
                                    try await outbound.close(.normalClosure, reason: nil)
                                    return
                                }
                            }
                        }
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            let bytes: [UInt8] =
                                switch message {
                                case .text(let text): Array(text.utf8)
                                case .binary(let buffer): Array(buffer.readableBytesView)
                                }
                            eventSink.yield(Self.event(from: bytes))
                        }
                        group.cancelAll()
                    }
                }
                let reason: SignalingCloseReason =
                    closedByClient.isSet
                    ? .byClient
                    : .byServer(code: closeFrame.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) }, reason: closeFrame?.reason)
                eventSink.yield(.closed(reason))
            } catch {
                let mapped: SignalingConnectError =
                    (error as? WebSocketClientError) == .webSocketUpgradeFailed ? .refused(status: 400) : .unreachable("\(error)")
                opened.fulfil(.failure(mapped))
                eventSink.yield(.closed(closedByClient.isSet ? .byClient : .failed("\(error)")))
            }
            eventSink.finish()
            commands.finish()
        }
        switch await opened.wait(timeout: timeout) {
        case .success?:
            return WebSocketSignalingConnection(events: events, commands: commands, task: task, closedByClient: closedByClient)
        case .failure(let error)?:
            throw error
        case nil:
            task.cancel()
            throw .timedOut
        }
    }

    public func send(_ envelope: Envelope) async throws {
        try sendRaw(envelope.encodedString())
    }

    /// Sends text as is (tests use it to send malformed input).
    public func sendRaw(_ text: String) throws {
        guard case .enqueued = commands.yield(.send(text)) else { throw SignalingSendError.notConnected }
    }

    public func close() async {
        closedByClient.set()
        commands.yield(.close)
        // A server that never answers the close handshake must not keep us waiting.
        let task = self.task
        await awaitAtMost(.seconds(2)) { await task.value }
        task.cancel()
    }

    /// Drops the connection without a close handshake, as a dying network would.
    public func abort() {
        task.cancel()
    }

    static func event(from bytes: [UInt8]) -> SignalingEvent {
        do {
            return .message(try Envelope.decode(bytes))
        } catch {
            return .undecodable(String(decoding: bytes.prefix(200), as: UTF8.self))
        }
    }
}
