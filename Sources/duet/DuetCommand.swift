import ArgumentParser

@main
struct DuetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duet",
        abstract: "Duet: resilient 1:1 WebRTC calling.",
        subcommands: [ServeCommand.self, CallCommand.self])
}
