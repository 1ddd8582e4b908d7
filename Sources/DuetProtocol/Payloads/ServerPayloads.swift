/// Payloads the server sends.

public enum ParticipantConnectionStatus: String, Codable, Sendable {
    case connected, suspended
}

public struct ParticipantInfo: Codable, Sendable, Equatable {
    public var cid: String
    public var joinedAt: Int64
    public var connectionStatus: ParticipantConnectionStatus?
    /// The participant's last `media_state`; absent until it sent one (to this server process).
    public var media: MediaState?
    public init(cid: String, joinedAt: Int64, connectionStatus: ParticipantConnectionStatus?, media: MediaState? = nil) {
        self.cid = cid
        self.joinedAt = joinedAt
        self.connectionStatus = connectionStatus
        self.media = media
    }
}

public enum ReconnectKind: String, Codable, Sendable {
    case fresh, reattached, recovered
}

public struct JoinedPayload: Codable, Sendable, Equatable {
    public var hostCid: String
    public var participants: [ParticipantInfo]
    public var maxParticipants: Int
    public var reconnect: ReconnectKind
    public var epoch: Int64
    public var reconnectToken: String
    public var reconnectTokenTTLMs: Int64
    public var turnToken: String
    /// Unix seconds.
    public var turnTokenExpiresAt: Int64
    public var turnTokenTTLMs: Int64
    /// Issue 31: only when the join carried a `deviceId`: the proof that this device has been in this room.
    public var memberToken: String?
    public var memberTokenTTLMs: Int64?

    public init(
        hostCid: String, participants: [ParticipantInfo], maxParticipants: Int, reconnect: ReconnectKind,
        epoch: Int64, reconnectToken: String, reconnectTokenTTLMs: Int64, turnToken: String,
        turnTokenExpiresAt: Int64, turnTokenTTLMs: Int64, memberToken: String? = nil, memberTokenTTLMs: Int64? = nil
    ) {
        self.memberToken = memberToken
        self.memberTokenTTLMs = memberTokenTTLMs
        self.hostCid = hostCid
        self.participants = participants
        self.maxParticipants = maxParticipants
        self.reconnect = reconnect
        self.epoch = epoch
        self.reconnectToken = reconnectToken
        self.reconnectTokenTTLMs = reconnectTokenTTLMs
        self.turnToken = turnToken
        self.turnTokenExpiresAt = turnTokenExpiresAt
        self.turnTokenTTLMs = turnTokenTTLMs
    }
}

public struct RoomStatePayload: Codable, Sendable, Equatable {
    public var hostCid: String
    public var participants: [ParticipantInfo]
    public var epoch: Int64
    public init(hostCid: String, participants: [ParticipantInfo], epoch: Int64) {
        self.hostCid = hostCid
        self.participants = participants
        self.epoch = epoch
    }
}

public struct RoomEndedPayload: Codable, Sendable, Equatable {
    public var by: String
    public var reason: String
    public init(by: String, reason: String) {
        self.by = by
        self.reason = reason
    }
}

public struct ErrorPayload: Codable, Sendable, Equatable {
    public var code: ErrorCode
    public var message: String
    public var retryable: Bool
    public init(code: ErrorCode, message: String, retryable: Bool? = nil) {
        self.code = code
        self.message = message
        self.retryable = retryable ?? code.isRetryable
    }
}

public struct TurnRefreshedPayload: Codable, Sendable, Equatable {
    public var turnToken: String
    public var turnTokenExpiresAt: Int64
    public var turnTokenTTLMs: Int64
    public init(turnToken: String, turnTokenExpiresAt: Int64, turnTokenTTLMs: Int64) {
        self.turnToken = turnToken
        self.turnTokenExpiresAt = turnTokenExpiresAt
        self.turnTokenTTLMs = turnTokenTTLMs
    }
}

public struct ReconnectTokenRefreshedPayload: Codable, Sendable, Equatable {
    public var reconnectToken: String
    public var reconnectTokenTTLMs: Int64
    public init(reconnectToken: String, reconnectTokenTTLMs: Int64) {
        self.reconnectToken = reconnectToken
        self.reconnectTokenTTLMs = reconnectTokenTTLMs
    }
}

public struct DrainingPayload: Codable, Sendable, Equatable {
    public var reconnectAfterMs: Int64
    /// In a cluster, the node the draining node hands this room to (its `--node-id`): the client names it on its
    /// reconnect (`&via=`, docs/protocol.md, Transports), so both clients of a room reach that node whatever the proxy
    /// thinks of the others. Absent: reconnect by the room alone (and forget any earlier `via`).
    public var via: String?
    public init(reconnectAfterMs: Int64, via: String? = nil) {
        self.reconnectAfterMs = reconnectAfterMs
        self.via = via
    }
}

public enum RelayFailureReason: String, Codable, Sendable {
    case noPeer = "no_peer"
    case targetSuspended = "target_suspended"
}

public struct RelayFailedPayload: Codable, Sendable, Equatable {
    public var reason: RelayFailureReason
    public var targets: [String]?
    public var of: String
    public init(reason: RelayFailureReason, targets: [String]?, of: String) {
        self.reason = reason
        self.targets = targets
        self.of = of
    }
}

public struct RoomStatusUpdatePayload: Codable, Sendable, Equatable {
    public var rid: String
    public var count: Int
    public init(rid: String, count: Int) {
        self.rid = rid
        self.count = count
    }
}

/// `GET /api/turn-credentials` answer, in coturn's REST form.
/// One entry of an RTCConfiguration's `iceServers`: STUN entries carry no credentials, TURN entries do.
public struct IceServer: Codable, Sendable, Equatable {
    public var urls: [String]
    public var username: String?
    public var credential: String?
    public init(urls: [String], username: String? = nil, credential: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }

    /// True for `turn:` and `turns:` URLs (the ones that can give a relay candidate).
    public static func isRelay(_ url: String) -> Bool {
        let lower = url.lowercased()
        return lower.hasPrefix("turn:") || lower.hasPrefix("turns:")
    }
}

/// `GET /api/turn-credentials`: every ICE server a client should use — the server's own STUN, any configured
/// STUN, and TURN with fresh coturn REST credentials. `username`, `password` and `uris` repeat the TURN entry in the
/// original (v1) shape and are absent when no TURN server is configured.
public struct TurnCredentials: Codable, Sendable, Equatable {
    public var iceServers: [IceServer]
    public var username: String?
    public var password: String?
    public var uris: [String]
    /// Seconds the credentials (and so this list) stay valid.
    public var ttl: Int64
    public init(iceServers: [IceServer], username: String?, password: String?, uris: [String], ttl: Int64) {
        self.iceServers = iceServers
        self.username = username
        self.password = password
        self.uris = uris
        self.ttl = ttl
    }

    private enum CodingKeys: String, CodingKey { case iceServers, username, password, uris, ttl }

    /// A server from before `iceServers` sent only the TURN fields: the list is made from them, so a newer client
    /// keeps its relay against an older server.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        username = try container.decodeIfPresent(String.self, forKey: .username)
        password = try container.decodeIfPresent(String.self, forKey: .password)
        uris = try container.decodeIfPresent([String].self, forKey: .uris) ?? []
        ttl = try container.decode(Int64.self, forKey: .ttl)
        if let list = try container.decodeIfPresent([IceServer].self, forKey: .iceServers) {
            iceServers = list
        } else if let username, let password, !uris.isEmpty {
            iceServers = [IceServer(urls: uris, username: username, credential: password)]
        } else {
            throw DecodingError.keyNotFound(
                CodingKeys.iceServers, .init(codingPath: decoder.codingPath, debugDescription: "neither iceServers nor TURN credentials"))
        }
    }
}

public struct RoomIdResponse: Codable, Sendable, Equatable {
    public var roomId: String
    public init(roomId: String) { self.roomId = roomId }
}

/// `ring_state`, to the caller: where its ring is. `devices`: how many of the other person's devices it reached (live
/// pages, and pushes a push service accepted). `state`: `ringing`, then one of `accepted`, `declined`, `no_answer`,
/// `cancelled`, `unreachable` (no device could be reached).
public struct RingStatePayload: Codable, Sendable, Equatable {
    public var callId: String
    public var state: String
    public var devices: Int
    public var expiresAt: Int64?
    public init(callId: String, state: String, devices: Int, expiresAt: Int64? = nil) {
        self.callId = callId
        self.state = state
        self.devices = devices
        self.expiresAt = expiresAt
    }
}

/// `incoming_call`, to a listening device: ring. `expiresAt` in unix ms.
public struct IncomingCallPayload: Codable, Sendable, Equatable {
    public var rid: String
    public var callId: String
    public var from: String
    public var caller: JSONValue?
    public var expiresAt: Int64
    public var snapshotId: String?
    public init(rid: String, callId: String, from: String, caller: JSONValue?, expiresAt: Int64, snapshotId: String? = nil) {
        self.rid = rid
        self.callId = callId
        self.from = from
        self.caller = caller
        self.expiresAt = expiresAt
        self.snapshotId = snapshotId
    }
}

/// `ring_ended`, to every device that was rung: stop ringing. `reason`: `accepted` (this device accepted),
/// `answered_elsewhere`, `declined`, `cancelled`, `no_answer`.
public struct RingEndedPayload: Codable, Sendable, Equatable {
    public var rid: String
    public var callId: String
    public var reason: String
    public init(rid: String, callId: String, reason: String) {
        self.rid = rid
        self.callId = callId
        self.reason = reason
    }
}
