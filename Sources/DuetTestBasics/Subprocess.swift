import Foundation

/// Runs a command to completion and returns its status and output (tests only).
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

public func runCommand(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(60)) async throws
    -> CommandResult
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    // Files, not pipes: a daemon the command starts may inherit a pipe and hold it open forever.
    let base = NSTemporaryDirectory() + "duet-cmd-" + UUID().uuidString
    _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
    _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
    defer {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let watchdog = Task {
        try await Task.sleep(for: timeout)
        process.terminate()
    }
    defer { watchdog.cancel() }
    // Polled rather than `waitUntilExit()`, which can miss an exit and block a thread for good.
    while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
    let stdout = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
    return CommandResult(status: process.terminationStatus, stdout: stdout, stderr: stderr)
}

/// The package root, found from this file's path.
public let packageRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url.path }
    }
    return FileManager.default.currentDirectoryPath
}()

public func commandExists(_ name: String) -> Bool {
    (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin:/usr/sbin:/sbin").split(separator: ":")
        .contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") }
}
