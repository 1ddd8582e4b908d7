/// The call so far, folded from its readings: the time they cover, the time without inbound media in it (with
/// the gaps no reading covers), the mean of the MOS readings, and reconnects. `QualityTracker` decides what is
/// added when; the browser's twin is `addReading` / `addGap` / `addReconnect` in call-quality.js.
public struct QualitySummary: Sendable, Equatable, Codable {
    public var readings = 0
    public var durationMs: Double = 0
    /// Intervals in which no inbound audio or video packet arrived.
    public var noMediaMs: Double = 0
    public var reconnects = 0
    public var mosTotal: Double = 0
    public var mosCount = 0
    /// The mean MOS of the readings that had one, to a hundredth; nil before the first.
    public var averageMos: Double?

    public init() {}

    public func adding(_ reading: QualityReading) -> QualitySummary {
        var next = self
        next.readings += 1
        next.durationMs += reading.intervalMs
        if !reading.mediaFlowing { next.noMediaMs += reading.intervalMs }
        if let mos = reading.mos {
            next.mosTotal += mos
            next.mosCount += 1
        }
        next.averageMos = next.mosCount > 0 ? QualityRounding.round(next.mosTotal / Double(next.mosCount), places: 2) : nil
        return next
    }

    /// Time in the call that no reading covers (no stats report): it counts, and counts as without media.
    public func addingGap(_ ms: Double) -> QualitySummary {
        var next = self
        next.durationMs += ms
        next.noMediaMs += ms
        return next
    }

    public func addingReconnect() -> QualitySummary {
        var next = self
        next.reconnects += 1
        return next
    }
}
