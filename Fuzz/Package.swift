// swift-tools-version:6.1
// libFuzzer targets for the parsers that read what a peer sends (docs/security.md). Not part of the root package:
// they build only with the fuzzer and address sanitizers. `scripts/fuzz.sh TARGET SECONDS` builds and runs one:
//   swift build --package-path Fuzz -c release --sanitize=fuzzer --sanitize=address \
//     -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
// (scripts/fuzz.sh says why each flag is needed.)
// Each target only calls a check in DuetProtocol (`FuzzChecks`) or DuetRooms (`TokenFuzzChecks`), which the root
// package's tests also run over `Fuzz/Corpus/` and `Fuzz/Regressions/`.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

// A path dependency's identity is the name of its folder (`main` in the usual checkout, something else in a clone
// named otherwise), so name it from where this manifest sits.
let duet = Context.packageDirectory.split(separator: "/").dropLast().last.map { $0.lowercased() } ?? "main"

let package = Package(
    name: "DuetFuzz",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "fuzz-envelope",
            dependencies: [.product(name: "DuetProtocol", package: duet)],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "fuzz-json-text",
            dependencies: [.product(name: "DuetProtocol", package: duet)],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "fuzz-sse-parser",
            dependencies: [.product(name: "DuetProtocol", package: duet)],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "fuzz-stun",
            dependencies: [.product(name: "DuetProtocol", package: duet)],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "fuzz-tokens",
            dependencies: [.product(name: "DuetProtocol", package: duet), .product(name: "DuetRooms", package: duet)],
            swiftSettings: strict
        ),
    ]
)
