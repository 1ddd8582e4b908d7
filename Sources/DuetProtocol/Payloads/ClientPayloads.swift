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

    public init(
        capabilities: Capabilities? = .init(), reconnectCid: String? = nil, reconnectToken: String? = nil,
        pushEndpoint: String? = nil, snapshotId: String? = nil, device: String? = nil
    ) {
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
    public init(rids: [String]) { self.rids = rids }
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
    public init(rid: String, cid: String, reconnectToken: String) {
        self.rid = rid
        self.cid = cid
        self.reconnectToken = reconnectToken
    }
}
