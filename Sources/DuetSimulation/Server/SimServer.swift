import Crypto
import DuetClient
import DuetProtocol
import DuetRooms

/// The real room logic (`SignalingCore`) inside a process that can die: a crash loses every room and
/// connection, a restart keeps the secrets (room ids and reconnect tokens stay valid) and what the core persisted
/// (ended rooms, left seats, rooms to continue: `DurableLedger`), as `duet serve` with its data directory does.
final class SimServer {
    private let authorities: SignalingCore.Authorities
    private let seed: UInt64
    private let settings: SignalingCore.Settings
    var core: SignalingCore
    private(set) var incarnation = 1
    private(set) var isUp = true
    var clockOffsetMs: Int64 = 0
    var webSocketRefusals = 0
    /// The store: written at once (SQLite's writes take milliseconds; a crash between a fact and its write is a
    /// window the simulator does not model).
    private(set) var ledger = DurableLedger()

    init(seed: UInt64, mutation: Mutation) {
        // Keys derived from the seed: a run is reproducible to the byte.
        var rng = SplitMix64(seed: seed ^ 0x5EED_5EED)
        func key() -> SymmetricKey { SymmetricKey(data: (0..<4).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }) }
        authorities = SignalingCore.Authorities(
            roomIds: RoomIdAuthority(key: key()),
            reconnectTokens: ReconnectTokenAuthority(key: key(), ttlMs: 20 * 60_000),
            turnTokens: TurnTokenAuthority(key: key(), ttlMs: 15 * 60_000))
        self.seed = seed
        var settings = SignalingCore.Settings()
        settings.closesSilentSSEStreams = mutation != .sseLivenessRemoved
        self.settings = settings
        roomIdRandom = SplitMix64(seed: seed ^ 0x0123_4567)
        core = SignalingCore(settings: settings, authorities: authorities, seed: seed)
    }

    private var roomIdRandom: SplitMix64

    /// Whether the server would take this reconnect token for this seat now.
    func acceptsReconnectToken(_ token: String, cid: String, rid: String, nowMs: Int64) -> Bool {
        if case .valid = authorities.reconnectTokens.verify(token, cid: cid, rid: rid, nowMs: nowMs) { return true }
        return false
    }

    func createRoomId() -> String? { isUp ? authorities.roomIds.issue(using: &roomIdRandom) : nil }

    func crash() {
        isUp = false
    }

    func persist(_ fact: DurableFact) { ledger.write(fact) }

    /// A new process: empty memory, then what the store remembers (`DuetServer.loadStore`). Returns what loading
    /// asked for (nothing is connected yet, so only events).
    func restart(nowMs: Int64) -> [SignalingCore.Output] {
        incarnation += 1
        core = SignalingCore(settings: settings, authorities: authorities, seed: seed &+ UInt64(incarnation))
        isUp = true
        return ledger.load(nowMs: nowMs).flatMap { core.handle(.learned($0), nowMs: nowMs) }
    }
}
