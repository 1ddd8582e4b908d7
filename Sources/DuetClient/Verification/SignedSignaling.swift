import DuetProtocol

/// The runtime's half of a verified call (issue 19): it signs the offers, answers and `verify_failed` this side
/// sends, and checks those it gets, before the engine sees them. HMACs are the runtime's business because the
/// browser can only compute them asynchronously (WebCrypto); the engine only learns the verdict
/// (`CallEngine.Input.descriptionRejected`). The browser's twin is `js/runtime/signed-signaling.js`.
///
/// Who is who comes from the engine's own events: the engine clears its session when it tears down, before the
/// runtime sends the `verify_failed` of that teardown, so the runtime keeps the last room and people it was told.
public struct SignedSignaling: Sendable {
    public let key: LinkKey?
    public private(set) var roomId: String?
    /// Our cids in this call, newest last (a few): a description the peer signed for our previous seat, just before
    /// it learned of our new one, is still addressed to us.
    public private(set) var myCids: [String] = []
    public var myCid: String? { myCids.last }
    public private(set) var peerCid: String?

    public init(key: LinkKey?) { self.key = key }

    public mutating func note(_ event: CallEvent) {
        switch event {
        case .room(let id):
            roomId = id
        case .participants(let list, _, let me):
            if !me.isEmpty, me != myCids.last {
                myCids.append(me)
                if myCids.count > 4 { myCids.removeFirst() }
            }
            peerCid = list.first { $0.cid != me }?.cid
        default:
            break
        }
    }

    /// `envelope` with its `auth` and `for` (the cid it was signed for), when it is ours to sign and there is a key;
    /// anything else as it is. Nil for one a keyed link must sign but cannot (nobody to send it to, no fingerprint):
    /// unsigned it would end the call as intercepted at the other side, so it is lost instead, as on a dying link
    /// (the offer timeout and the recovery ladder send a description again).
    public func signed(_ envelope: Envelope) -> Envelope? {
        guard let key, envelope.messageType == .offer || envelope.messageType == .answer || envelope.messageType == .verifyFailed
        else { return envelope }
        guard let rid = roomId, let me = myCid, let peer = peerCid else { return nil }
        var signed = envelope
        switch envelope.messageType {
        case .offer?, .answer?:
            guard let sdp = envelope.payload["sdp"]?.stringValue,
                let auth = FingerprintAuth.auth(key: key, rid: rid, sender: me, receiver: peer, sdp: sdp)
            else { return nil }
            signed.payload["auth"] = .string(auth)
        default:
            signed.payload["auth"] = .string(FingerprintAuth.verifyFailedAuth(key: key, rid: rid, sender: me, receiver: peer))
        }
        signed.payload["for"] = .string(peer)
        return signed
    }

    public enum Verdict: Sendable, Equatable {
        /// Give it to the engine as `.message`.
        case pass
        /// An offer or answer the key does not vouch for: `.descriptionRejected`.
        case rejected
        /// Not ours to judge, so ignored: a `verify_failed` nobody with the key wrote (or no key to check it with), or
        /// a description or `verify_failed` signed `for` another seat (it changed hands while the message was on its
        /// way: an honest race, not an interception).
        case dropped
    }

    /// The verdict on a received envelope. The sender is who the server says it is (`payload.from`): a server that
    /// lies about it fails the check like one that rewrote the SDP.
    public func check(_ envelope: Envelope) -> Verdict {
        switch envelope.messageType {
        case .offer?, .answer?:
            // Without a key nothing is checked; a payload without an SDP is dropped by the engine anyway.
            guard let key, let sdp = envelope.payload["sdp"]?.stringValue else { return .pass }
            guard let rid = roomId, let from = envelope.payload["from"]?.stringValue else { return .rejected }
            if let target = envelope.payload["for"]?.stringValue, !myCids.contains(target) { return .dropped }
            let auth = envelope.payload["auth"]?.stringValue
            let vouched = myCids.contains { FingerprintAuth.verify(auth: auth, key: key, rid: rid, sender: from, receiver: $0, sdp: sdp) }
            return vouched ? .pass : .rejected
        case .verifyFailed?:
            guard let key, let rid = roomId, let from = envelope.payload["from"]?.stringValue else { return .dropped }
            if let target = envelope.payload["for"]?.stringValue, !myCids.contains(target) { return .dropped }
            let auth = envelope.payload["auth"]?.stringValue
            let vouched = myCids.contains { FingerprintAuth.verifyVerifyFailed(auth: auth, key: key, rid: rid, sender: from, receiver: $0) }
            return vouched ? .pass : .dropped
        default:
            return .pass
        }
    }
}
