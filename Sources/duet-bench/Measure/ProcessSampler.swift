import Foundation

/// Resident memory and CPU time of a process, from /proc (Linux).
struct ProcessSample: Codable, Sendable {
    var rssKiB: Int
    var cpuSeconds: Double

    init(pid: Int32) {
        rssKiB = Self.rss(pid)
        cpuSeconds = Self.cpu(pid)
    }

    private static func rss(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    private static func cpu(_ pid: Int32) -> Double {
        // Fields after the command name (which may contain spaces): utime is the 14th, stime the 15th.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
