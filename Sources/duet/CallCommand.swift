import ArgumentParser
import Foundation

/// `duet call …` runs `duet-call …`, the GStreamer peer built as its own product, so that `duet serve` never
/// needs GStreamer to build or run.
struct CallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Join a call as a headless peer with real audio and video (runs duet-call; needs GStreamer).",
        discussion: "All arguments go to duet-call; see `duet call --help` once duet-call is built.")

    @Argument(parsing: .captureForPassthrough)
    var arguments: [String] = []

    func run() throws {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let peer = here.appendingPathComponent("duet-call").path
        guard FileManager.default.isExecutableFile(atPath: peer) else {
            throw ValidationError(
                """
                duet call needs the duet-call peer next to this binary (\(peer)).
                Build it with `swift build --product duet-call` after installing GStreamer:
                  apt-get install gstreamer1.0-plugins-bad gstreamer1.0-nice gstreamer1.0-plugins-good \\
                    libgstreamer1.0-dev libgstreamer-plugins-bad1.0-dev libgstreamer-plugins-base1.0-dev libnice-dev
                """)
        }
        let argv = [peer] + arguments
        let cArgs = argv.map { strdup($0) } + [nil]
        execv(peer, cArgs)
        throw ValidationError("could not run \(peer): \(String(cString: strerror(errno)))")
    }
}
