import DuetClient
import DuetProtocol

/// One call engine's life in a run, for the differential replay (`scripts/differential.sh`): the options it was
/// made with and every input it was fed, each with the outputs it gave, in the trace form both engines share
/// (`CallEngine+TraceForm.swift`). The browser engine replays the inputs and must give the same outputs.
public struct EngineTrace: Sendable {
    public var side: Side
    public var options: JSONValue
    /// `{"input": …, "outputs": […]}` per step.
    public var steps: [JSONValue] = []

    /// JSON lines: a header (`{"engine": n, "side": "A", "options": …, "steps": count}`), then one line per step.
    public func jsonLines(index: Int) -> [String] {
        let header: JSONValue = [
            "engine": .int(Int64(index)), "side": .string("\(side)"), "options": options, "steps": .int(Int64(steps.count)),
        ]
        return ([header] + steps).map { String(decoding: JSONText.write($0), as: UTF8.self) }
    }
}

extension Simulation.Result {
    /// Every engine trace of the run, as one JSON-lines text (a process restart starts a new engine).
    public var engineTraceText: String {
        engineTraces.enumerated().flatMap { $0.element.jsonLines(index: $0.offset) }.joined(separator: "\n") + "\n"
    }
}
