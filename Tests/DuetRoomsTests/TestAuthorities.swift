import Crypto
import DuetRooms

extension SignalingCore.Authorities {
    /// Fresh random keys with the server's default lifetimes (reconnect 20 min, TURN 15 min): what the rule tests share.
    static func forTests() -> Self {
        SignalingCore.Authorities(
            roomIds: RoomIdAuthority(key: SymmetricKey(size: .bits256)),
            reconnectTokens: ReconnectTokenAuthority(key: SymmetricKey(size: .bits256), ttlMs: 1_200_000),
            turnTokens: TurnTokenAuthority(key: SymmetricKey(size: .bits256), ttlMs: 900_000))
    }
}
