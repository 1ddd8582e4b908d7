import DuetClient
import Foundation

/// `--events jsonl`: one JSON object per line on stdout, `t` in milliseconds since start; and the live
/// one-line status on stderr when it is a terminal.
final class EventLog: @unchecked Sendable {
    private let jsonl: Bool
    private let started = ContinuousClock.now
    private let lock = NSLock()
    private let statusOnTerminal = isatty(STDERR_FILENO) == 1
    private var status = Status()

    struct Status {
        var phase = "Idle"
        var connection = "connected"
        var transport = "-"
        var candidateType = "-"
        var rttMs: Double?
        var frames = 0
        var packets = 0
        var levelDb: Double?
    }

    init(jsonl: Bool) { self.jsonl = jsonl }

    func record(_ event: CallEvent) {
        switch event {
        case .phase(let phase):
            update { $0.phase = Self.name(of: phase) }
            write(["event": "phase", "value": Self.name(of: phase)])
        case .connectionStatus(let value):
            update { $0.connection = value.rawValue }
            write(["event": "connectionStatus", "value": value.rawValue])
        case .transport(let value):
            update { $0.transport = value?.rawValue ?? "-" }
            write(["event": "transport", "value": value?.rawValue ?? NSNull()])
        case .failure(let failure):
            write(["event": "error"].merging(Self.describe(failure)) { $1 })
        case .iceRestart(let reason):
            write(["event": "iceRestart", "value": "\(reason)"])
        case .escalation(let step):
            write(["event": "escalation", "value": step.rawValue])
        case .stats(let stats):
            update {
                $0.frames = stats.videoFramesReceived
                $0.packets = stats.audioPacketsReceived
                $0.levelDb = stats.audioLevelDb
                $0.candidateType = stats.candidateType ?? "-"
                $0.rttMs = stats.roundTripTimeMs
            }
            var line: [String: Any] = [
                "event": "media", "videoFramesReceived": stats.videoFramesReceived,
                "audioPacketsReceived": stats.audioPacketsReceived, "candidateType": stats.candidateType ?? NSNull(),
            ]
            if let rtt = stats.roundTripTimeMs { line["rttMs"] = rtt }
            if let samples = stats.audioSamplesDecoded { line["audioSamplesDecoded"] = samples }
            if let level = stats.audioLevelDb { line["audioLevelDb"] = Self.rounded(level) }
            if let peak = stats.audioPeakDb { line["audioPeakDb"] = Self.rounded(peak) }
            write(line)
        case .room(let id):
            write(["event": "room", "value": id])
        case .participants(let list, let host, let me):
            write(["event": "participants", "count": list.count, "hostCid": host, "cid": me])
        case .session:
            break  // a headless peer does not outlive its process
        case .replaced:
            write(["event": "replaced", "value": "another connection took this seat over; this peer stopped"])
        }
    }

    func note(_ fields: [String: Any]) { write(fields) }

    /// dB to a tenth: finer digits are noise.
    static func rounded(_ db: Double) -> Double { (db * 10).rounded() / 10 }

    /// The seed diagrams' names: `Idle`, `Joining`, `Waiting`, `InCall`, …
    static func name(of phase: CallPhase) -> String {
        switch phase {
        case .idle: "Idle"
        case .creatingRoom: "CreatingRoom"
        case .joining: "Joining"
        case .waiting: "Waiting"
        case .inCall: "InCall"
        case .ending: "Ending"
        case .error: "Error"
        }
    }

    static func describe(_ failure: CallFailure) -> [String: Any] {
        switch failure {
        case .roomCreationFailed(let reason): ["value": "ROOM_CREATION_FAILED", "message": reason]
        case .joinTimedOut: ["value": "JOIN_TIMEOUT", "message": "the server did not answer the join in time"]
        case .joinRefused(let code, let message): ["value": code.rawValue, "message": message]
        }
    }

    private func update(_ change: (inout Status) -> Void) {
        lock.lock()
        change(&status)
        let s = status
        lock.unlock()
        guard statusOnTerminal else { return }
        let rtt = s.rttMs.map { String(format: "%.0f ms", $0) } ?? "-"
        let level = s.levelDb.map { String(format: "%.0f dBFS", $0) } ?? "-"
        let line = "\r\u{1B}[2K\(s.phase) · \(s.connection) · \(s.transport) · \(s.candidateType) · rtt \(rtt) · \(s.frames) frames · \(s.packets) audio packets · audio \(level)"
        FileHandle.standardError.write(Data(line.utf8))
    }

    private func write(_ fields: [String: Any]) {
        guard jsonl else { return }
        var object = fields
        object["t"] = Int((ContinuousClock.now - started) / .milliseconds(1))
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        lock.lock()
        FileHandle.standardOutput.write(data + Data("\n".utf8))
        lock.unlock()
    }
}
