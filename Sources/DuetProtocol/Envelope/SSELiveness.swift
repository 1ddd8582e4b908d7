/// The server's liveness rule for SSE (protocol: "Liveness"). A stream only carries server → client, so the
/// server cannot see a vanished client on it: the stream's TCP connection can stay "open" for many minutes
/// after the client's network went away, and everything relayed to it would vanish. Clients send `ping` every
/// `clientPingIntervalMs` on either transport, so a sid that has POSTed nothing for two intervals (plus a grace
/// for a slow POST) is gone: the server closes its stream and suspends its seat, as it does for a silent
/// WebSocket.
///
/// One definition, used by `SignalingCore` (so by `duet serve` and by the simulator's server alike).
public enum SSELiveness {
    /// How often every client pings (`ResilienceConstants.PING_INTERVAL_MS`; `ConstantsTests` checks they agree).
    public static let clientPingIntervalMs: Int64 = 12_000
    /// Room for a ping POST delayed by a slow network or a busy client.
    public static let graceMs: Int64 = 3_000
    /// A stream whose sid has sent nothing for this long is closed.
    public static let silenceLimitMs: Int64 = 2 * clientPingIntervalMs + graceMs

    /// True when a stream last heard from at `lastHeardMs` is silent at `nowMs`.
    public static func isSilent(lastHeardMs: Int64, nowMs: Int64) -> Bool {
        nowMs - lastHeardMs >= silenceLimitMs
    }
}
