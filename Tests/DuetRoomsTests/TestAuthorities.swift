import Crypto
import DuetProtocol
import DuetTestBasics

@testable import DuetRooms

extension SignalingCore.Authorities {
    /// Fresh random keys with the server's default lifetimes (reconnect 20 min, TURN 15 min): what the rule tests share.
    static func forTests() -> Self {
        SignalingCore.Authorities(
            roomIds: RoomIdAuthority(key: SymmetricKey(size: .bits256)),
            reconnectTokens: ReconnectTokenAuthority(key: SymmetricKey(size: .bits256), ttlMs: 1_200_000),
            turnTokens: TurnTokenAuthority(key: SymmetricKey(size: .bits256), ttlMs: 900_000))
    }
}

extension SignalingCore {
    /// Joins `connection` to `rid` and returns what the server answered it (`joined`), or throws with the outputs.
    mutating func joinedForTest(_ connection: ConnectionID, rid: String, now: Int64, payload: JoinPayload = JoinPayload()) throws
        -> JoinedPayload
    {
        let outputs = handle(.message(connection, Envelope(.join, rid: rid, payload: try JSONValue(encoding: payload))), nowMs: now)
        for case .send(let target, let envelope) in outputs where target == connection && envelope.messageType == .joined {
            return try envelope.payload.decode(JoinedPayload.self)
        }
        throw TestFailure("no joined in \(outputs)")
    }
}
