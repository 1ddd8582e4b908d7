import Crypto
import DuetProtocol
import Foundation

/// A ring arriving at this device (issue 31), shaped for CallKit (`CXProvider.reportNewIncomingCall`) and Android's
/// `ConnectionService`: a stable UUID per call attempt, who is calling (verified by the link's key, or not), and
/// when the ring stops by itself.
public struct IncomingCall: Sendable, Equatable, Identifiable {
    /// Derived from the room and the call id: the same ring reported twice (live and by push) is one call to CallKit.
    public let id: UUID
    public let roomId: String
    public let callId: String
    public let caller: CallerSeal.Caller
    /// Unix ms.
    public let expiresAt: Int64
    /// The secrets that prove this device's answer (sealed by the caller; nil without a link key).
    public let answers: CallerSeal.AnswerSecrets?

    public init(roomId: String, callId: String, caller: CallerSeal.Caller, expiresAt: Int64, answers: CallerSeal.AnswerSecrets? = nil) {
        self.roomId = roomId
        self.callId = callId
        self.caller = caller
        self.expiresAt = expiresAt
        self.answers = answers
        id = Self.uuid(roomId: roomId, callId: callId)
    }

    /// A name-based UUID (SHA-256 of room and call id, version and variant bits set).
    static func uuid(roomId: String, callId: String) -> UUID {
        var bytes = Array(Array(SHA256.hash(data: Data("duet-call|\(roomId)|\(callId)".utf8))).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// How a ring ended for this device: CallKit's `CXCallEndedReason` has a case for each but `acceptedHere`.
    public enum EndReason: String, Sendable, Equatable {
        /// This device accepted: join the call now.
        case acceptedHere = "accepted"
        /// Another of this person's devices answered (`.answeredElsewhere`).
        case answeredElsewhere = "answered_elsewhere"
        /// Declined here or on another device (`.declinedElsewhere`).
        case declined
        /// The caller hung up before anyone answered: a missed call (`.remoteEnded`).
        case cancelled
        /// Nobody answered in time: a missed call (`.unanswered`).
        case missed = "no_answer"
    }
}

/// Where an app's push token comes from (issue 31): an iOS app gives its APNs VoIP (PushKit) token, an Android app its
/// FCM token, so the server can wake the device for a ring. Duet's server sends Web Push only; sending through APNs or
/// FCM is outside this package (an app's own relay, or a future server feature), so this is a seam for the app to
/// implement and register with that relay; nothing in DuetClient calls it yet.
public protocol PushTokenProvider: Sendable {
    /// The current token, or nil when the app has none (permission refused, no push on this device).
    func pushToken() async -> PushToken?
}

public struct PushToken: Sendable, Equatable {
    public enum Service: String, Sendable {
        case apnsVoIP = "apns-voip"
        case fcm
        case webPush = "webpush"
    }
    public var service: Service
    /// The token (APNs: hex of the device token; FCM: the registration token; Web Push: the endpoint).
    public var value: String
    public init(service: Service, value: String) {
        self.service = service
        self.value = value
    }
}
