import DuetProtocol
import DuetRooms
import Foundation
import Testing

/// The `fuzz-tokens` target's check (`TokenFuzzChecks.tokens`) over its checked-in seeds (`Fuzz/Corpus/fuzz-tokens/`)
/// and every input that once crashed it (`Fuzz/Regressions/fuzz-tokens/`), without sanitizers.
@Suite struct TokenFuzzCorpusTests {
    static let target = "fuzz-tokens"

    static func folder(_ kind: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz").appendingPathComponent(kind).appendingPathComponent(target)
    }

    static func inputs(_ kind: String) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder(kind).path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { folder(kind).appendingPathComponent($0) }
    }

    @Test func everySeedAndRegressionPasses() throws {
        #expect(!Self.inputs("Corpus").isEmpty, "no seeds in Fuzz/Corpus/\(Self.target)")
        for file in Self.inputs("Corpus") + Self.inputs("Regressions") {
            let failure = TokenFuzzChecks.tokens(try [UInt8](Data(contentsOf: file)))
            #expect(failure == nil, "\(file.lastPathComponent): \(failure ?? "")")
        }
    }

    /// The fuzzer mutates real tokens only if the seeds are what the fixed keys issue: a change to a token's format
    /// or to the keys must re-issue `room-id.txt`, `reconnect-token.txt` and `turn-token.txt`.
    @Test func theSeedTokensAreAccepted() throws {
        func seed(_ name: String) throws -> String {
            try String(decoding: Data(contentsOf: Self.folder("Corpus").appendingPathComponent(name)), as: UTF8.self)
        }
        #expect(try TokenFuzzChecks.verdicts(seed("room-id.txt")).authenticRoomId)
        #expect(try seed("room-id.txt") == TokenFuzzChecks.rid)
        #expect(try TokenFuzzChecks.verdicts(seed("reconnect-token.txt")).reconnect == .valid(expiresAt: 1_700_001_200))
        #expect(
            try TokenFuzzChecks.verdicts(seed("turn-token.txt")).turnSeat
                == TurnTokenAuthority.Seat(rid: TokenFuzzChecks.rid, cid: TokenFuzzChecks.cid))
        #expect(try !TokenFuzzChecks.verdicts(seed("not-a-room-id.txt")).authenticRoomId)
    }

    /// fuzz-tokens' first crash (Fuzz/Regressions/fuzz-tokens/): `Int64` read the expiry "0…" or "+…", so the issued
    /// token had other spellings that verified as valid. Only the issued spelling is a token now.
    @Test func aReconnectTokenHasOneSpelling() {
        let issued = "07a09e319f487052a372219c9823f7c801e9e2bbea705f5a13d9021e9c3d0489.1700001200"
        #expect(TokenFuzzChecks.verdicts(issued).reconnect == .valid(expiresAt: 1_700_001_200))
        for respelled in [
            "07a09e319f487052a372219c9823f7c801e9e2bbea705f5a13d9021e9c3d0489.01700001200",
            "07a09e319f487052a372219c9823f7c801e9e2bbea705f5a13d9021e9c3d0489.+1700001200",
            "07a09e319f487052a372219c9823f7c801e9e2bbea705f5a13d9021e9c3d0489.1700001200 ",
        ] {
            #expect(TokenFuzzChecks.verdicts(respelled).reconnect == .malformed, "\(respelled)")
            #expect(ReconnectTokenParts(parsing: respelled) == nil, "\(respelled)")
        }
    }
}
