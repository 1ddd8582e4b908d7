/// Error codes of protocol v1. `retryable` tells a client whether trying the same thing later can succeed.
public enum ErrorCode: String, Sendable, CaseIterable, Codable {
    case badRequest = "BAD_REQUEST"
    case unsupportedVersion = "UNSUPPORTED_VERSION"
    case invalidRoomId = "INVALID_ROOM_ID"
    case roomFull = "ROOM_FULL"
    case notHost = "NOT_HOST"
    case notInRoom = "NOT_IN_ROOM"
    case invalidReconnectToken = "INVALID_RECONNECT_TOKEN"
    case roomEnded = "ROOM_ENDED"
    case rateLimited = "RATE_LIMITED"
    case messageTooLarge = "MESSAGE_TOO_LARGE"
    case turnRefreshFailed = "TURN_REFRESH_FAILED"
    case `internal` = "INTERNAL"

    public var isRetryable: Bool {
        switch self {
        case .rateLimited, .turnRefreshFailed, .internal: true
        default: false
        }
    }
}

/// A protocol violation found while reading a message: it becomes an `error` message to the sender.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
