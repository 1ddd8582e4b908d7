/// Payloads a client sends. Unknown fields are allowed and ignored by the server.

public struct JoinPayload: Codable, Sendable, Equatable {
    public struct Capabilities: Codable, Sendable, Equatable {
        public var trickleIce: Bool?
        public init(trickleIce: Bool? = true) { self.trickleIce = trickleIce }
    }

    public var capabilities: Capabilities?
    public var reconnectCid: String?
    public var reconnectToken: String?
    public var pushEndpoint: String?
    public var snapshotId: String?
    public var device: String?
    /// Issue 31: this browser's (or app's) id for itself, 16–64 base64url characters, kept across calls. With it,
    /// `joined` carries a `memberToken`: the proof that this device has been in this room, with which it may
    /// listen for rings and answer them later, when it is not in the call.
    public var deviceId: String?
    /// Issue 31: false asks the server not to send the seed's join alert for this join, because the joiner is about
    /// to ring (a ring says more, and one notification is enough). Absent: the alert is sent, as the seed does.
    public var alert: Bool?

    public init(
        capabilities: Capabilities? = .init(), reconnectCid: String? = nil, reconnectToken: String? = nil,
        pushEndpoint: String? = nil, snapshotId: String? = nil, device: String? = nil, deviceId: String? = nil
    ) {
        self.deviceId = deviceId
        self.capabilities = capabilities
        self.reconnectCid = reconnectCid
        self.reconnectToken = reconnectToken
        self.pushEndpoint = pushEndpoint
        self.snapshotId = snapshotId
        self.device = device
    }
}

public struct SessionDescriptionPayload: Codable, Sendable, Equatable {
    public var sdp: String
    public init(sdp: String) { self.sdp = sdp }
}

/// `verify_failed`: the HMAC that proves the sender holds the link's key (docs/protocol.md, "Verified calls").
public struct VerifyFailedPayload: Codable, Sendable, Equatable {
    public var auth: String
    public init(auth: String) { self.auth = auth }
}

/// `restart_request {reason}`: why the sender wants its peer to restart ICE (one of the engine's restart reasons;
/// informative, never acted on beyond the restart itself).
public struct RestartRequestPayload: Codable, Sendable, Equatable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}

public struct IceCandidate: Codable, Sendable, Hashable {
    public var candidate: String
    public var sdpMid: String?
    public var sdpMLineIndex: Int?
    public init(candidate: String, sdpMid: String?, sdpMLineIndex: Int?) {
        self.candidate = candidate
        self.sdpMid = sdpMid
        self.sdpMLineIndex = sdpMLineIndex
    }
}

/// `{candidate:{…}}`, or `{candidate:null}` for end-of-candidates.
public struct IcePayload: Codable, Sendable, Equatable {
    public var candidate: IceCandidate?
    public init(candidate: IceCandidate?) { self.candidate = candidate }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(candidate, forKey: .candidate)  // null must be written, not omitted
    }
}

public struct WatchRoomsPayload: Codable, Sendable, Equatable {
    public var rids: [String]
    /// Issue 31: ring me here. The rooms among `rids` whose member token for `deviceId` is valid also ring this
    /// connection (`incoming_call`).
    public var listen: ListenPayload?
    public init(rids: [String], listen: ListenPayload? = nil) {
        self.rids = rids
        self.listen = listen
    }
}

public struct ListenPayload: Codable, Sendable, Equatable {
    public var deviceId: String
    /// rid → the `memberToken` this device got in that room's `joined`.
    public var members: [String: String]
    public init(deviceId: String, members: [String: String]) {
        self.deviceId = deviceId
        self.members = members
    }
}

/// `ring`: ring the other person's devices. `callId` (1–64 base64url characters) names this call attempt; `caller`
/// is what the devices show of the caller, opaque to the server (the name and picture sealed with the link's key),
/// at most `RingLimits.maxCallerBytes` once encoded.
public struct RingPayload: Codable, Sendable, Equatable {
    public var callId: String
    public var caller: JSONValue?
    /// A snapshot of the caller uploaded for this ring (`POST /api/push/snapshot`), shown by the devices it was
    /// encrypted for.
    public var snapshotId: String?
    /// What an answer must prove (`RingAnswerCommitments`): present when the caller sealed its answer secrets.
    public var answers: RingAnswerCommitments?
    public init(callId: String, caller: JSONValue? = nil, snapshotId: String? = nil, answers: RingAnswerCommitments? = nil) {
        self.callId = callId
        self.caller = caller
        self.snapshotId = snapshotId
        self.answers = answers
    }
}

/// Issue 31: an answer proven with the call's key. The caller puts a random secret per answer inside its sealed
/// `caller` (only devices with the link's key open it) and gives the server their SHA-256 here; an answer counts only
/// with the secret whose hash is its commitment. The server checks what it cannot make: a stranger who took an empty
/// seat for a member token cannot decline (or accept) someone else's ring.
public struct RingAnswerCommitments: Codable, Sendable, Equatable {
    /// base64url SHA-256 of each answer's secret.
    public var accept: String
    public var decline: String
    public init(accept: String, decline: String) {
        self.accept = accept
        self.decline = decline
    }

    public func commitment(for answer: RingAnswerPayload.Answer) -> String {
        switch answer {
        case .accept: accept
        case .decline: decline
        }
    }

    public var isWellFormed: Bool { [accept, decline].allSatisfy { $0.utf8.count == 43 && Base64URL.decode($0)?.count == 32 } }
}

public struct RingCancelPayload: Codable, Sendable, Equatable {
    public var callId: String
    public init(callId: String) { self.callId = callId }
}

/// `ring_answer` (and `POST /api/ring/answer`): a device accepts or declines. Over a listening connection the
/// listening proves the device; over HTTP the `deviceId` and `memberToken` do.
public struct RingAnswerPayload: Codable, Sendable, Equatable {
    public enum Answer: String, Codable, Sendable { case accept, decline }
    public var rid: String?
    public var callId: String
    public var answer: Answer
    public var deviceId: String?
    public var memberToken: String?
    /// The answer's secret from the sealed caller (base64url), when the ring has `answers`.
    public var secret: String?
    public init(rid: String?, callId: String, answer: Answer, deviceId: String? = nil, memberToken: String? = nil, secret: String? = nil) {
        self.rid = rid
        self.callId = callId
        self.answer = answer
        self.deviceId = deviceId
        self.memberToken = memberToken
        self.secret = secret
    }
}

public enum RingLimits {
    /// How long a ring rings before it is "no answer". 45 s: longer than a phone's typical 30 s because a push to a
    /// sleeping phone takes a few seconds to wake it, and short enough that a caller is not left waiting.
    public static let ringTimeoutMs: Int64 = 45_000
    /// A ring another node holds is forgotten this long after its `expiresAt` if its end never arrived (clients end a
    /// ring by themselves 2 s after it).
    public static let remoteRingGraceMs: Int64 = 10_000
    /// In a cluster, how long a ring that reached no device waits for another node to say it rang one live.
    public static let clusterUnreachableGraceMs: Int64 = 3_000
    public static let maxCallerBytes = 2_048
    /// Per room: rings started in `windowMs` at most (a ring is a notification on someone's lock screen).
    public static let perRoomInWindow = 5
    /// Per calling seat: rings started in `windowMs` at most.
    public static let perCallerInWindow = 3
    public static let windowMs: Int64 = 5 * 60_000
    /// How long a ring's outcome is kept for a caller whose link was down when it ended.
    public static let outcomeMemoryMs: Int64 = 5 * 60_000
    /// Join alerts per room: a few at once (two people arriving, one coming back), then one per interval, so a
    /// join/leave loop does not become a stream of notifications.
    public static let joinAlertBurst = 3.0
    public static let joinAlertIntervalMs: Int64 = 30_000
    /// A sealed caller name older than this (by its own time) is not shown: a replayed ring is not a new call. Rings
    /// last 45 s; the rest is for clocks that disagree.
    public static let callerSealMaxAgeMs: Int64 = 5 * 60_000

    public static func isValidId(_ id: String, minimum: Int = 1) -> Bool {
        (minimum...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                    || byte == 0x5F
            }
    }
}

public struct PingPayload: Codable, Sendable, Equatable {
    public var ts: Int64?
    public init(ts: Int64?) { self.ts = ts }
}

/// Body of `POST /api/leave`.
public struct LeaveRequest: Codable, Sendable, Equatable {
    public var rid: String
    public var cid: String
    public var reconnectToken: String
    /// The host ending the call for both (its `end_room` said over HTTP): the room ends, as with `end_room`, when this
    /// seat is its host; anyone else just leaves. Without it a host's goodbye over HTTP, sent when signaling is down or
    /// as the browser's second goodbye after `end_room`, only left, and could reach the server before the `end_room`:
    /// the other person was then made host of a room nobody had ended (docs/protocol.md).
    public var end: Bool?
    public init(rid: String, cid: String, reconnectToken: String, end: Bool? = nil) {
        self.rid = rid
        self.cid = cid
        self.reconnectToken = reconnectToken
        self.end = end
    }
}
