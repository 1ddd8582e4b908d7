import DuetProtocol
import DuetTestBasics

@testable import DuetRooms

/// Two participants seated in one room of a fresh core, for the relay tests (`verify_failed`, `restart_request`).
struct TwoInARoom {
    var core: SignalingCore
    let a = ConnectionID(1), b = ConnectionID(2)

    init() throws {
        let authorities = SignalingCore.Authorities.forTests()
        core = SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: 7)
        let rid = authorities.roomIds.issue()
        _ = core.handle(.opened(a, .ws, sid: nil), nowMs: 0)
        _ = core.handle(.opened(b, .ws, sid: nil), nowMs: 0)
        _ = try core.joinedForTest(a, rid: rid, now: 0, payload: JoinPayload())
        _ = try core.joinedForTest(b, rid: rid, now: 0, payload: JoinPayload())
    }

    static func sent(_ outputs: [SignalingCore.Output], to connection: ConnectionID) -> [Envelope] {
        outputs.compactMap { if case .send(connection, let envelope) = $0 { envelope } else { nil } }
    }
}
