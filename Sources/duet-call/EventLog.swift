import DuetClient
import Foundation

/// `--events jsonl`: one JSON object per line on stdout, `t` in milliseconds since start; and the live
/// one-line status on stderr when it is a terminal.
final class EventLog: @unchecked Sendable {
    private let jsonl: Bool
    /// `--raw-stats`: also each second's stats report as webrtcbin gave it (what the quality fixtures are made of).
    private let rawStats: Bool
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
        var quality = "-"
        var verification = Verification.unverified
        var safetyCode: String?
    }

    init(jsonl: Bool, rawStats: Bool = false) {
        self.jsonl = jsonl
        self.rawStats = rawStats
    }

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
            if rawStats, let report = stats.rawReport, let sample = stats.quality { writeRaw(report, sample: sample) }
        case .quality(let reading):
            update { $0.quality = reading.level?.rawValue ?? "-" }
            write(Self.fields(of: reading))
        case .qualityUnknown:
            update { $0.quality = "-" }
            write(["event": "quality", "level": NSNull()])
        case .remoteMedia(let state):
            write([
                "event": "remoteMedia", "audio": state.map { $0.audio as Any } ?? NSNull(),
                "video": state.map { $0.video as Any } ?? NSNull(), "screen": state.map { $0.screen as Any } ?? NSNull(),
            ])
        case .room(let id):
            write(["event": "room", "value": id])
        case .participants(let list, let host, let me):
            write(["event": "participants", "count": list.count, "hostCid": host, "cid": me])
        case .session:
            break  // a headless peer does not outlive its process
        case .replaced:
            write(["event": "replaced", "value": "another connection took this seat over; this peer stopped"])
        case .verification(let value):
            update { $0.verification = value }
            writeVerification()
        case .safetyCode(let code):
            update { $0.safetyCode = code }
            writeVerification()
        }
    }

    func note(_ fields: [String: Any]) { write(fields) }

    /// `{"event":"verification","value":"verified"|"unverified"|"intercepted","safetyCode":"123456"|null}`, written
    /// whenever either changes.
    private func writeVerification() {
        let s = lock.withLock { status }
        write(["event": "verification", "value": s.verification.rawValue, "safetyCode": s.safetyCode ?? NSNull()])
    }

    /// The call's quality summary, written once when it is over.
    func summary(_ summary: QualitySummary) {
        write([
            "event": "summary", "durationMs": summary.durationMs, "averageMos": summary.averageMos.map { $0 as Any } ?? NSNull(),
            "reconnects": summary.reconnects, "noMediaMs": summary.noMediaMs, "readings": summary.readings,
        ])
    }

    /// `{"event":"quality",…}`: every field of the reading, null where unknown (docs/call-quality.md).
    static func fields(of reading: QualityReading) -> [String: Any] {
        func value(_ optional: (some Any)?) -> Any { optional.map { $0 as Any } ?? NSNull() }
        return [
            "event": "quality", "level": value(reading.level?.rawValue), "mos": value(reading.mos), "rttMs": value(reading.rttMs),
            "lossPct": value(reading.lossPct), "jitterMs": value(reading.jitterMs), "bitrateInKbps": value(reading.bitrateInKbps),
            "bitrateOutKbps": value(reading.bitrateOutKbps), "frameWidth": value(reading.frameWidth),
            "frameHeight": value(reading.frameHeight), "fps": value(reading.fps), "audioCodec": value(reading.audioCodec),
            "videoCodec": value(reading.videoCodec), "candidateType": value(reading.candidateType),
            "mediaFlowing": reading.mediaFlowing, "intervalMs": reading.intervalMs,
        ]
    }

    private func writeRaw(_ report: String, sample: QualitySample) {
        guard let raw = try? JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any],
            let normalized = try? JSONSerialization.jsonObject(with: JSONEncoder().encode(sample))
        else { return }
        write([
            "event": "rawStats", "atMs": sample.timestampMs, "sample": normalized, "decoded": raw["decoded"] ?? NSNull(),
            "report": raw["report"] ?? NSNull(),
        ])
    }

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

    /// "verified · code 123 456", "not verified · code 123 456", "INTERCEPTED": what the status line says.
    static func describe(_ verification: Verification, _ code: String?) -> String {
        let shown = code.map { " · code \($0.prefix(3)) \($0.dropFirst(3))" } ?? ""
        switch verification {
        case .verified: return "verified" + shown
        case .unverified: return "not verified" + shown
        case .intercepted: return "INTERCEPTED: this call may be intercepted; it was ended"
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
        let line =
            "\r\u{1B}[2K\(s.phase) · \(s.connection) · \(s.transport) · \(s.candidateType) · rtt \(rtt) · \(s.frames) frames · \(s.packets) audio packets · audio \(level) · quality \(s.quality) · \(Self.describe(s.verification, s.safetyCode))"
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
