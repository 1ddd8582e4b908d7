import ArgumentParser
import DuetVersion

@main
struct DuetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duet",
        abstract: "Duet: resilient 1:1 WebRTC calling.",
        version: DuetVersion.description,
        subcommands: [ServeCommand.self, CallCommand.self])
}
