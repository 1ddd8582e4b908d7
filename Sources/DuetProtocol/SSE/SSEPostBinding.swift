/// The SSE POST binding (docs/protocol.md): a stream's first message, `sse_session {postToken}`, gives the token every
/// POST for that stream must carry in `X-Duet-Post-Token`. The sid travels in URLs, which proxies log, so the sid alone
/// authorizes nothing.
public enum SSEPostBinding {
    public static let header = "X-Duet-Post-Token"
    public static let messageType = "sse_session"

    /// The `sse_session` envelope that opens a stream.
    public static func firstMessage(postToken: String, nowMs: Int64) -> Envelope {
        Envelope(MessageType.sseSession, ts: nowMs, payload: ["postToken": .string(postToken)])
    }

    /// The token if `text` is an `sse_session` message, else nil (any other message is signaling).
    public static func token(inFirstMessage text: String) -> String? {
        guard text.utf8.count < 1024, let envelope = try? Envelope.decode(Array(text.utf8)),
            envelope.messageType == .sseSession, let token = envelope.payload["postToken"]?.stringValue, !token.isEmpty
        else { return nil }
        return token
    }
}
