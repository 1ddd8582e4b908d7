import Crypto
import DuetProtocol

/// What the `fuzz-tokens` target (`Fuzz/`, `scripts/fuzz.sh`) checks on every input, shared with
/// `Tests/DuetRoomsTests/TokenFuzzCorpusTests`: returns nil when the input passes, or what broke.
///
/// The input is read twice. As text, it is offered to each authority (fixed keys below; the seed corpus holds a room
/// id and tokens they issued for `cid`/`rid` at `nowMs`, for libFuzzer to mutate): whatever an authority accepts must
/// be the one spelling it issues. As entropy, it picks a room id, a participant id and a clock, and a token freshly
/// issued for them must verify, for that seat only, until it expires; any one-character change to an issued room id
/// must be refused.
public enum TokenFuzzChecks {
    public static let roomIdKey = SymmetricKey(data: [UInt8](repeating: 0x52, count: 32))
    public static let reconnectKey = SymmetricKey(data: [UInt8](repeating: 0x43, count: 32))
    public static let turnKey = SymmetricKey(data: [UInt8](repeating: 0x54, count: 32))
    public static let reconnectTTLMs: Int64 = 1_200_000
    public static let turnTTLMs: Int64 = 900_000
    /// The seat the seed tokens were issued to, and when they are checked (2023-11-14T22:13:20Z).
    public static let cid = "C-0123456789abcdef"
    public static let rid = "AQIDBAUGBwgJCgsMyhTNE1vuRis"
    public static let nowMs: Int64 = 1_700_000_000_000

    static let roomIds = RoomIdAuthority(key: roomIdKey)
    static let reconnectTokens = ReconnectTokenAuthority(key: reconnectKey, ttlMs: reconnectTTLMs)
    static let turnTokens = TurnTokenAuthority(key: turnKey, ttlMs: turnTTLMs)

    /// What each authority says of `text` at `nowMs` for the fixed seat.
    public static func verdicts(_ text: String) -> (
        authenticRoomId: Bool, reconnect: ReconnectTokenAuthority.Verdict, turnSeat: TurnTokenAuthority.Seat?
    ) {
        (roomIds.isAuthentic(text), reconnectTokens.verify(text, cid: cid, rid: rid, nowMs: nowMs), turnTokens.seat(of: text, nowMs: nowMs))
    }

    public static func tokens(_ bytes: [UInt8]) -> String? {
        if let failure = FuzzChecks.identifiers(bytes) { return failure }
        if let failure = asText(String(decoding: bytes, as: UTF8.self)) { return failure }
        var entropy = InputGenerator(bytes)
        return freshlyIssued(using: &entropy)
    }

    private static func asText(_ text: String) -> String? {
        guard roomIds.isAuthentic(rid) else { return "the fixed room id \(rid) is not authentic under the fixed key" }
        let (authentic, reconnect, turnSeat) = verdicts(text)
        if authentic {
            guard RoomIdFormat.isWellFormed(text), let bytes = Base64URL.decode(text), Base64URL.encode(bytes) == text else {
                return "RoomIdAuthority accepts \(text.debugDescription), which is not a canonical room id"
            }
        }
        if case .valid(let expiresAt) = reconnect {
            let canonical = reconnectTokens.issue(cid: cid, rid: rid, nowMs: expiresAt * 1000 - reconnectTTLMs)
            guard text == canonical else {
                return "ReconnectTokenAuthority accepts \(text.debugDescription), a second spelling of \(canonical)"
            }
        }
        if let turnSeat {
            guard turnSeat == TurnTokenAuthority.Seat(rid: rid, cid: cid) else {
                return "TurnTokenAuthority gives the seat \(turnSeat) for \(text.debugDescription), never issued"
            }
        }
        return nil
    }

    private static func freshlyIssued(using entropy: inout InputGenerator) -> String? {
        let rid = roomIds.issue(using: &entropy)
        guard RoomIdFormat.isWellFormed(rid), roomIds.isAuthentic(rid) else { return "a freshly issued room id \(rid) is refused" }
        var changed = Array(rid.utf8)
        let position = Int.random(in: 0..<changed.count, using: &entropy)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let replacement = alphabet[Int.random(in: 0..<alphabet.count, using: &entropy)]
        if changed[position] != replacement {
            changed[position] = replacement
            let forged = String(decoding: changed, as: UTF8.self)
            guard !roomIds.isAuthentic(forged) else { return "room id \(forged), one character off the issued \(rid), is accepted" }
        }

        let cid = "C-" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255, using: &entropy) })
        let otherCid = "C-" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255, using: &entropy) })
        // A wall clock between 1970 and 2100.
        let nowMs = Int64.random(in: 0..<4_102_444_800_000, using: &entropy)

        let token = reconnectTokens.issue(cid: cid, rid: rid, nowMs: nowMs)
        let expiresAt = (nowMs + reconnectTTLMs + 999) / 1000
        guard reconnectTokens.verify(token, cid: cid, rid: rid, nowMs: nowMs) == .valid(expiresAt: expiresAt) else {
            return "a reconnect token issued for \(cid) in \(rid) at \(nowMs) does not verify: \(token)"
        }
        guard reconnectTokens.verify(token, cid: cid, rid: rid, nowMs: expiresAt * 1000) == .expired else {
            return "a reconnect token issued at \(nowMs) is not expired at \(expiresAt * 1000): \(token)"
        }
        if otherCid != cid {
            guard reconnectTokens.verify(token, cid: otherCid, rid: rid, nowMs: nowMs) == .forged else {
                return "a reconnect token issued for \(cid) verifies for \(otherCid): \(token)"
            }
        }
        guard reconnectTokens.verify(token, cid: cid, rid: Self.rid, nowMs: nowMs) == .forged else {
            return "a reconnect token issued for \(rid) verifies for \(Self.rid): \(token)"
        }

        let turn = turnTokens.issue(rid: rid, cid: cid, nowMs: nowMs)
        guard turn.expiresAt == (nowMs + turnTTLMs + 999) / 1000 else {
            return "a TURN token issued at \(nowMs) expires at \(turn.expiresAt)"
        }
        guard turnTokens.seat(of: turn.token, nowMs: nowMs) == TurnTokenAuthority.Seat(rid: rid, cid: cid) else {
            return "a TURN token issued for \(cid) in \(rid) at \(nowMs) does not give that seat: \(turn.token)"
        }
        guard turnTokens.seat(of: turn.token, nowMs: turn.expiresAt * 1000) == nil else {
            return "a TURN token issued at \(nowMs) is accepted at its expiry \(turn.expiresAt * 1000): \(turn.token)"
        }
        return nil
    }
}

/// Random numbers drawn from the fuzz input: SplitMix64 seeded with the input's FNV-1a hash, so that every input
/// picks its own ids and clock and libFuzzer's mutations reach new ones.
struct InputGenerator: RandomNumberGenerator {
    private var generator: SplitMix64

    init(_ bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        generator = SplitMix64(seed: hash)
    }

    mutating func next() -> UInt64 { generator.next() }
}
