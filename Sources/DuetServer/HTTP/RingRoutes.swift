import DuetProtocol
import Foundation
import Hummingbird

/// `POST /api/ring/answer` `{rid, callId, answer:"accept"|"decline", deviceId, memberToken}` → 204: a device that has
/// no signaling connection answers a ring (a notification's Accept or Decline, from the service worker). The member
/// token proves the device has been in this call; a room id alone proves nothing (401). An answer to a ring that is
/// over is accepted and changes nothing: the device cannot know it lost the race.
struct RingRoutes: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper

    func register(on router: Router<DuetRequestContext>) {
        router.post("/api/ring/answer") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            var request = request
            let answer: RingAnswerPayload
            do {
                let bytes = try await request.collectBody(upTo: ProtocolLimits.maxMessageBytes)
                answer = try JSONDecoder().decode(RingAnswerPayload.self, from: Data(bytes.readableBytesView))
            } catch {
                return .text(.badRequest, "body must be JSON {rid, callId, answer: \"accept\"|\"decline\", deviceId, memberToken}")
            }
            guard RingLimits.isValidId(answer.callId) else { return .text(.badRequest, "callId must be 1–64 base64url characters") }
            guard hub.answerRing(answer) else {
                return .text(.unauthorized, "only a device that has been in this call may answer its rings (deviceId and memberToken)")
            }
            return Response(status: .noContent)
        }
    }
}
