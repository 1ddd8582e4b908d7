import DuetClient
import DuetProtocol

/// Short, readable trace text.
enum Describe {
    static func time(_ ms: Int64) -> String {
        let seconds = ms / 1_000
        let millis = ms % 1_000
        return "\(seconds).\(String(repeating: "0", count: millis < 10 ? 2 : millis < 100 ? 1 : 0))\(millis)s"
    }

    static func envelope(_ envelope: Envelope) -> String {
        var text = envelope.type
        if let epoch = envelope.epoch { text += " e\(epoch)" }
        switch envelope.messageType {
        case .offer?, .answer?:
            if let sdp = envelope.payload["sdp"]?.stringValue, let parsed = SimMediaPlane.parse(sdp) {
                text += " pc#\(parsed.instance) \(parsed.ufrag)"
            }
        case .joined?:
            text += " \(envelope.payload["reconnect"]?.stringValue ?? "") \(envelope.cid ?? "")"
        case .error?:
            text += " \(envelope.payload["code"]?.stringValue ?? "")"
        default: break
        }
        return text
    }

    static func input(_ input: CallEngine.Input) -> String {
        switch input {
        case .message(let envelope): "message \(Self.envelope(envelope))"
        case .localDescriptionReady(let kind, let sdp): "local \(kind) \(SimMediaPlane.parse(sdp)?.ufrag ?? "")"
        case .localCandidate: "local candidate"
        default: "\(input)"
        }
    }
}
