import DuetProtocol

public enum SignalingTransport: String, Sendable, CaseIterable {
    case ws, sse
}

/// The signaling connection: WebSocket first, SSE when WebSocket cannot work, reconnect with
/// exponential backoff forever, and application-level ping/pong to find dead links (000 §4, §9).
public struct SignalingLinkMachine: Sendable, Equatable {
    public enum Failure: Sendable, Equatable {
        /// No open within `CONNECT_TIMEOUT_MS`.
        case timeout
        /// The server or a proxy refused the transport (e.g. upgrade refused).
        case unsupported
        case error
    }

    public enum CloseReason: Sendable, Equatable {
        case pongTimeout
        case closedByServer
        case networkError
    }

    public enum Event: Sendable, Equatable {
        /// Start (or restart, e.g. join kickstart) connecting if not connected.
        case connect
        case opened(SignalingTransport)
        case openFailed(SignalingTransport, Failure)
        case closed(CloseReason)
        case pong
        /// Seed 001 escalation: give the other transport a chance now.
        case forceFallback
        /// The user left: stop everything.
        case stop
        case timerFired(TimerID)
    }

    public enum Action: Sendable, Equatable {
        case open(SignalingTransport)
        case close
        case sendPing
        case up(SignalingTransport)
        case down(CloseReason?)
        case timer(TimerCommand)
    }

    public enum State: Sendable, Equatable {
        case idle
        case connecting(SignalingTransport)
        case connected(SignalingTransport)
        case waitingToReconnect(next: SignalingTransport)
    }

    public private(set) var state: State = .idle
    public private(set) var webSocketEverConnected = false
    public private(set) var consecutiveWebSocketFailures = 0
    public private(set) var reconnectAttempts = 0
    private var pingOutstanding = false
    private var missedPongs = 0
    private var backoff: Backoff
    private let sseAvailable: Bool
    private let webSocketAvailable: Bool

    /// `webSocketAvailable: false` runs on SSE only (a network known to break WebSockets, or a test).
    public init(sseAvailable: Bool = true, webSocketAvailable: Bool = true, jitterSeed: UInt64? = nil) {
        self.sseAvailable = sseAvailable
        self.webSocketAvailable = webSocketAvailable || !sseAvailable
        self.backoff = Backoff(
            baseMs: ResilienceConstants.RECONNECT_BACKOFF_BASE_MS, capMs: ResilienceConstants.RECONNECT_BACKOFF_CAP_MS,
            jitterRatio: jitterSeed == nil ? 0 : ResilienceConstants.BACKOFF_JITTER_RATIO, seed: jitterSeed ?? 0)
    }

    public var transport: SignalingTransport? {
        if case .connected(let transport) = state { return transport }
        return nil
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.idle, .connect):
            return open(webSocketAvailable ? .ws : .sse)
        case (.waitingToReconnect(let next), .connect):
            return [.timer(.cancel(.reconnectBackoff))] + open(next)
        case (.connecting(let attempt), .opened(let transport)) where attempt == transport:
            state = .connected(transport)
            reconnectAttempts = 0
            pingOutstanding = false
            missedPongs = 0
            if transport == .ws {
                webSocketEverConnected = true
                consecutiveWebSocketFailures = 0
            }
            return [
                .timer(.cancel(.connectTimeout)), .up(transport),
                .timer(.schedule(.ping, afterMs: ResilienceConstants.PING_INTERVAL_MS)),
            ]
        case (.connecting(let attempt), .openFailed(let transport, let failure)) where attempt == transport:
            return [.timer(.cancel(.connectTimeout))] + failed(transport, failure)
        case (.connecting(let attempt), .timerFired(.connectTimeout)):
            return [.close] + failed(attempt, .timeout)
        case (.connected, .pong):
            pingOutstanding = false
            missedPongs = 0
            return []
        case (.connected, .timerFired(.ping)):
            if pingOutstanding { missedPongs += 1 }
            if missedPongs >= ResilienceConstants.PONG_MISS_THRESHOLD {
                return [.close] + lost(.pongTimeout)
            }
            pingOutstanding = true
            return [.sendPing, .timer(.schedule(.ping, afterMs: ResilienceConstants.PING_INTERVAL_MS))]
        case (.connected, .closed(let reason)):
            return lost(reason)
        case (.connected(let current), .forceFallback):
            let other: SignalingTransport = current == .ws ? .sse : .ws
            guard (other == .ws && webSocketAvailable) || (other == .sse && sseAvailable) else { return [] }
            return [.close, .timer(.cancel(.ping)), .down(nil)] + open(other)
        case (.waitingToReconnect, .forceFallback):
            return [.timer(.cancel(.reconnectBackoff))] + open(sseAvailable ? .sse : .ws)
        case (.waitingToReconnect(let next), .timerFired(.reconnectBackoff)):
            return open(next)
        case (_, .stop):
            let wasOpen = state != .idle
            state = .idle
            return (wasOpen ? [.close] : []) + TimerID.linkTimers.map { .timer(.cancel($0)) }
        default:
            return []
        }
    }

    private mutating func open(_ transport: SignalingTransport) -> [Action] {
        state = .connecting(transport)
        return [.open(transport), .timer(.schedule(.connectTimeout, afterMs: ResilienceConstants.CONNECT_TIMEOUT_MS))]
    }

    /// The connection dropped after it was up: reconnect on the same transport after a backoff.
    private mutating func lost(_ reason: CloseReason) -> [Action] {
        guard case .connected(let transport) = state else { return [] }
        if transport == .ws, reason != .closedByServer { consecutiveWebSocketFailures += 1 }
        return [.timer(.cancel(.ping)), .down(reason)] + scheduleReconnect(next: nextTransport(after: transport, failure: nil))
    }

    private mutating func failed(_ transport: SignalingTransport, _ failure: Failure) -> [Action] {
        if transport == .ws { consecutiveWebSocketFailures += 1 }
        let next = nextTransport(after: transport, failure: failure)
        if transport == .ws, next == .sse {
            // Fallback is immediate (000 §9 summary: "WS → SSE fallback, Immediate").
            return open(.sse)
        }
        return scheduleReconnect(next: next)
    }

    /// WS never connected, timed out, was unsupported, or failed 3 times in a row → SSE.
    /// After SSE fails the cycle starts again from WebSocket (000 §9 flowchart).
    private func nextTransport(after transport: SignalingTransport, failure: Failure?) -> SignalingTransport {
        guard webSocketAvailable else { return .sse }
        guard transport == .ws, sseAvailable else { return .ws }
        if !webSocketEverConnected || failure == .timeout || failure == .unsupported
            || consecutiveWebSocketFailures >= ResilienceConstants.WS_FALLBACK_CONSECUTIVE_FAILURES
        {
            return .sse
        }
        return .ws
    }

    private mutating func scheduleReconnect(next: SignalingTransport) -> [Action] {
        state = .waitingToReconnect(next: next)
        let delay = backoff.delay(attempt: reconnectAttempts)
        reconnectAttempts += 1
        return [.timer(.schedule(.reconnectBackoff, afterMs: delay))]
    }
}

extension TimerID {
    static let linkTimers: [TimerID] = [.connectTimeout, .reconnectBackoff, .ping]
}
