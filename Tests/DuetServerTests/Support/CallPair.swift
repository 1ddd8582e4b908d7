import DuetProtocol
import DuetTestSupport
import DuetTransport
import Foundation

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

    /// The guest's transport goes away; returns once the host has seen the suspension.
    func dropGuest() async throws {
        await guest.close()
        try await host.peerSuspended()
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

extension TestServer {
    /// Joins a fresh room and fetches TURN credentials with the `turnToken` from `joined`.
    func joinAndFetchTurnCredentials() async throws -> (status: Int, credentials: TurnCredentials?, joined: TestClient.Joined) {
        let rid = try await roomId()
        let client = try await TestClient.connect(.ws, to: self)
        defer { Task { await client.close() } }
        let joined = try await client.join(rid)
        let response = try await http(.GET, "api/turn-credentials?token=" + joined.payload.turnToken)
        let credentials = try? JSONDecoder().decode(TurnCredentials.self, from: Data(response.body.utf8))
        return (response.status, credentials, joined)
    }
}
