import DuetRooms

/// What a push request shows to prove it comes from someone in the call (issue 31): the `cid` and reconnect token of
/// a seat, or the `deviceId` and member token a device was given when it joined. A room id alone proves nothing: it
/// travels in links and logs (docs/security.md).
struct PushProof: Decodable, Sendable {
    var cid: String?
    var reconnectToken: String?
    var deviceId: String?
    var memberToken: String?

    func proves(rid: String, hub: SessionHub) -> Bool {
        let seated = cid.flatMap { cid in reconnectToken.map { hub.provesSeat(rid: rid, cid: cid, token: $0) } } ?? false
        let member = deviceId.flatMap { device in memberToken.map { hub.provesMember(rid: rid, deviceId: device, token: $0) } } ?? false
        return seated || member
    }

    static let refusal =
        "this needs proof that you are in the call: the cid and reconnectToken of your seat, or the deviceId and memberToken from joined (a room id alone proves nothing)"
}
