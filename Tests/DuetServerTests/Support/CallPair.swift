import DuetTestSupport
import DuetProtocol
import DuetTransport

/// Two participants joined to one fresh room: the starting point of most tests.
struct CallPair {
    var rid: String
    var host: TestClient
    var hostJoined: TestClient.Joined
    var guest: TestClient
    var guestJoined: TestClient.Joined

    func close() async {
        await host.close()
        await guest.close()
    }
}

extension TestServer {
    func callPair(host hostKind: SignalingTransportKind = .ws, guest guestKind: SignalingTransportKind = .ws) async throws -> CallPair {
        let rid = try await roomId()
        let host = try await TestClient.connect(hostKind, to: self)
        let hostJoined = try await host.join(rid)
        let guest = try await TestClient.connect(guestKind, to: self)
        let guestJoined = try await guest.join(rid)
        return CallPair(rid: rid, host: host, hostJoined: hostJoined, guest: guest, guestJoined: guestJoined)
    }
}

extension TestClient {
    /// Waits for the `room_state` that shows the other participant suspended.
    @discardableResult
    func peerSuspended() async throws -> RoomStatePayload {
        try await roomState { $0.participants.contains { $0.connectionStatus == .suspended } }
    }
}
