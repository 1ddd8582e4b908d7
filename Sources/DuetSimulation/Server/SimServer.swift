import Crypto
import DuetClient
import DuetProtocol
import DuetServer

/// The real room logic (`SignalingCore`) inside a process that can die: a crash loses every room and
/// connection, a restart keeps the secrets (room ids and reconnect tokens stay valid), as `duet serve`
/// with its data directory does.
final class SimServer {
    private let authorities: SignalingCore.Authorities
    private let seed: UInt64
    var core: SignalingCore
    private(set) var incarnation = 1
    private(set) var isUp = true
    var clockOffsetMs: Int64 = 0
    var webSocketRefusals = 0

    init(seed: UInt64) {
        // Keys derived from the seed: a run is reproducible to the byte.
        var rng = SplitMix64(seed: seed ^ 0x5EED_5EED)
        func key() -> SymmetricKey { SymmetricKey(data: (0..<4).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }) }
        authorities = SignalingCore.Authorities(
            roomIds: RoomIdAuthority(key: key()),
            reconnectTokens: ReconnectTokenAuthority(key: key(), ttlMs: 20 * 60_000),
            turnTokens: TurnTokenAuthority(key: key(), ttlMs: 15 * 60_000))
        self.seed = seed
        roomIdRandom = SplitMix64(seed: seed ^ 0x0123_4567)
        core = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: seed)
    }

    private var roomIdRandom: SplitMix64

    func createRoomId() -> String? { isUp ? authorities.roomIds.issue(using: &roomIdRandom) : nil }

    func crash() {
        isUp = false
    }

    func restart() {
        incarnation += 1
        core = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: seed &+ UInt64(incarnation))
        isUp = true
    }
}
