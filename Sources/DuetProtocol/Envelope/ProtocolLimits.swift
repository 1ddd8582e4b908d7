/// Limits every Duet implementation enforces (protocol v1).
public enum ProtocolLimits {
    /// Largest WebSocket message or SSE POST body.
    public static let maxMessageBytes = 64 * 1024
    public static let maxParticipants = 2
    /// Interval of server WebSocket ping frames and SSE `: ping` comments.
    public static let serverPingIntervalMs: Int64 = 12_000
    /// A WebSocket silent for this long is closed by the server.
    public static let serverSilenceTimeoutMs: Int64 = 30_000
    public static let maxWatchedRooms = 64
    /// Signaling messages one connection may send (a token bucket: a burst of `messageBurst`, then `messagesPerSecond`);
    /// past it the server answers `RATE_LIMITED` and closes on abuse. A client that keeps to its timers stays far
    /// inside it; the simulator fails a run whose client does not (`Violation.Invariant.messageFlood`).
    public static let messageBurst = 100.0
    public static let messagesPerSecond = 50.0
}
