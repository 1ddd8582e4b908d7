/// Makes a failing run readable: drops faults one at a time while the same invariant still breaks.
public enum Shrinker {
    public static func minimize(_ failing: Simulation.Result, options: Simulation.Options) -> Simulation.Result {
        guard let invariant = failing.violations.first?.invariant else { return failing }
        var best = failing
        var index = 0
        while index < best.faults.count, best.faults.count > 1 {
            var attempt = options
            attempt.faults = best.faults.enumerated().filter { $0.offset != index }.map(\.element)
            let result = Simulation.run(attempt)
            if result.violations.first?.invariant == invariant {
                best = result
            } else {
                index += 1
            }
        }
        return best
    }

    /// The schedule, the violation and the trace that led to it.
    public static func report(_ result: Simulation.Result, context: Int = 60) -> String {
        var lines = ["seed \(result.seed): \(result.violations.count) violation(s)"]
        lines += result.violations.prefix(3).map { "  ✗ \($0)" }
        lines.append("faults (\(result.faults.count)):")
        lines += result.faults.map { "  \($0)" }
        let cut = result.trace.firstIndex { $0.contains("VIOLATION") } ?? (result.trace.count - 1)
        lines.append("trace (the \(context) lines up to the first violation):")
        lines += result.trace[max(0, cut - context)...min(cut, result.trace.count - 1)].map { "  \($0)" }
        return lines.joined(separator: "\n")
    }
}
