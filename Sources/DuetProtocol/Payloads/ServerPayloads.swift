/// Payloads the server sends.

public enum ParticipantConnectionStatus: String, Codable, Sendable {
    case connected, suspended
}

public struct ParticipantInfo: Codable, Sendable, Equatable {
    public var cid: String
    public var joinedAt: Int64
    public var connectionStatus: ParticipantConnectionStatus?
    public init(cid: String, joinedAt: Int64, connectionStatus: ParticipantConnectionStatus?) {
        self.cid = cid
        self.joinedAt = joinedAt
        self.connectionStatus = connectionStatus
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

    public init(
        hostCid: String, participants: [ParticipantInfo], maxParticipants: Int, reconnect: ReconnectKind,
        epoch: Int64, reconnectToken: String, reconnectTokenTTLMs: Int64, turnToken: String,
        turnTokenExpiresAt: Int64, turnTokenTTLMs: Int64
    ) {
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
    public init(reconnectAfterMs: Int64) { self.reconnectAfterMs = reconnectAfterMs }
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
public struct TurnCredentials: Codable, Sendable, Equatable {
    public var username: String
    public var password: String
    public var uris: [String]
    /// Seconds.
    public var ttl: Int64
    public init(username: String, password: String, uris: [String], ttl: Int64) {
        self.username = username
        self.password = password
        self.uris = uris
        self.ttl = ttl
    }
}

public struct RoomIdResponse: Codable, Sendable, Equatable {
    public var roomId: String
    public init(roomId: String) { self.roomId = roomId }
}
