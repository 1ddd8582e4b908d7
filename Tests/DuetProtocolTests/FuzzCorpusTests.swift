import DuetProtocol
import Foundation
import Testing

/// The fuzz targets' checks (`FuzzChecks`, what `scripts/fuzz.sh` runs under libFuzzer) over every checked-in seed
/// (`Fuzz/Corpus/TARGET/`) and every input that once crashed a target (`Fuzz/Regressions/TARGET/`), without sanitizers.
@Suite struct FuzzCorpusTests {
    enum Target: String, CaseIterable, Sendable {
        case envelope = "fuzz-envelope"
        case jsonText = "fuzz-json-text"
        case sseParser = "fuzz-sse-parser"
        case tokens = "fuzz-tokens"
        case stun = "fuzz-stun"

        func check(_ bytes: [UInt8]) -> String? {
            switch self {
            case .envelope: FuzzChecks.envelope(bytes)
            case .jsonText: FuzzChecks.jsonText(bytes)
            case .sseParser: FuzzChecks.sseParser(bytes)
            case .stun: FuzzChecks.stun(bytes)
            // The DuetRooms half of this target's check runs in DuetRoomsTests (TokenFuzzCorpusTests).
            case .tokens: FuzzChecks.identifiers(bytes)
            }
        }
    }

    /// The files under `Fuzz/Corpus/TARGET/` and `Fuzz/Regressions/TARGET/`, found from this file's place in the tree.
    static func inputs(_ target: String, in kinds: [String] = ["Corpus", "Regressions"]) -> [URL] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return kinds.flatMap { kind -> [URL] in
            let folder = root.appendingPathComponent("Fuzz").appendingPathComponent(kind).appendingPathComponent(target)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return names.sorted().filter { !$0.hasPrefix(".") }.map { folder.appendingPathComponent($0) }
        }
    }

    @Test(arguments: Target.allCases)
    func everySeedAndRegressionPasses(_ target: Target) throws {
        #expect(!Self.inputs(target.rawValue, in: ["Corpus"]).isEmpty, "no seeds in Fuzz/Corpus/\(target.rawValue)")
        for file in Self.inputs(target.rawValue) {
            let bytes = try [UInt8](Data(contentsOf: file))
            let failure = target.check(bytes)
            #expect(failure == nil, "\(file.lastPathComponent): \(failure ?? "")")
        }
    }
}
