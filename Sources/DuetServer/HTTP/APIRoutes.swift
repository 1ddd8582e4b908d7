import DuetProtocol
import Foundation
import Hummingbird

/// `/api/room-id`, `/api/turn-credentials` (the ICE servers: STUN, and TURN with credentials), `/api/leave`.
struct APIRoutes: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper
    let roomIds: RoomIdAuthority
    let turnTokens: TurnTokenAuthority
    let iceServers: IceServerList
    let turnPerSeat: IPRateLimiter

    func register(on router: Router<DuetRequestContext>) {
        let issueRoomId: @Sendable (Request, DuetRequestContext) async throws -> Response = { request, context in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            return .json(.ok, RoomIdResponse(roomId: roomIds.issue()))
        }
        router.get("/api/room-id", use: issueRoomId)
        router.post("/api/room-id", use: issueRoomId)

        router.get("/api/turn-credentials") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            guard !iceServers.isEmpty else { return .text(.serviceUnavailable, "no STUN or TURN server is configured") }
            let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            guard let token = request.uri.queryParameters["token"].map(String.init), let seat = turnTokens.seat(of: token, nowMs: nowMs)
            else {
                return .text(.unauthorized, "missing, invalid or expired TURN token; refresh it with turn-refresh")
            }
            // Relay credentials are for a seat that exists now (connected or suspended), not for whoever once held one.
            guard hub.hasSeat(rid: seat.rid, cid: seat.cid) else {
                return .text(.unauthorized, "this TURN token's seat has left the room (or the room ended); join again")
            }
            guard turnPerSeat.allow(seat.rid + "|" + seat.cid, nowMs: nowMs) else {
                var response = Response.text(.tooManyRequests, "too many TURN credential requests for this seat; retry shortly")
                response.headers[.retryAfter] = "5"
                return response
            }
            return .json(.ok, iceServers.response(hostHeader: request.head.authority, nowMs: nowMs))
        }

        router.post("/api/leave") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            var request = request
            let leave: LeaveRequest
            do {
                let body = try await request.collectBody(upTo: ProtocolLimits.maxMessageBytes)
                leave = try JSONDecoder().decode(LeaveRequest.self, from: Data(body.readableBytesView))
            } catch {
                return .text(.badRequest, "body must be JSON {rid, cid, reconnectToken, end?}")
            }
            // Answered once the store has it: a 204 is never undone by a crash (issue 34).
            switch await hub.leave(leave) {
            case (.left, true): return Response(status: .noContent)
            case (.left, false):
                var response = Response.text(
                    .serviceUnavailable, "the leave is not stored yet (the store is down or the server is stopping); send it again")
                response.headers[.retryAfter] = "1"
                return response
            case (.invalidToken, _): return .text(.unauthorized, "reconnectToken is not valid for this cid and rid")
            }
        }
    }
}
