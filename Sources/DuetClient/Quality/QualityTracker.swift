/// What counts towards a call's quality, as a pure value: the call's phase and connection status and each stats
/// poll go in, readings come out and the summary is folded. One rule for every engine — the browser's twin is
/// `js/quality/quality-tracker.js`, and both replay the same traces (Tests/fixtures/quality-tracker) to the same
/// outputs:
/// - **A new call** (`joining`) starts a fresh summary.
/// - **Readings are taken only in `inCall`.** Leaving it (the peer left, the call ends) stops counting; coming
///   back measures from a fresh sample, so the time spent waiting for someone is not a dropout.
/// - **The summary covers `inCall` from the first stats report on.** A poll that finds no report (no peer
///   connection, or the engine gave none) counts the time since the last counted moment as time without media,
///   and so does the gap before the first report of a new peer connection: a dropout is a dropout whether or not
///   there was a connection to ask.
/// - **A reconnect** is the connection status leaving `connected` while in the call, once media has flowed in this
///   stretch of it: a call whose media is slow to come up the first time has not *re*connected.
/// - **The level people see follows**: when a reading stops being current (no report, or the call left `inCall`)
///   the tracker says so (`.unknown`), so no screen keeps showing a stale "good".
/// - **Poll times are the runtime's** (`atMs`, monotonic): a sample's own timestamp is replaced by it, so readings
///   and gaps are measured on one clock.
public struct QualityTracker: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        case phase(CallPhase)
        case connectionStatus(ConnectionStatus)
        /// A stats poll at `atMs`: the engine's sample, or nil when there was no report.
        case polled(atMs: Double, sample: QualitySample?)
    }

    public enum Output: Sendable, Equatable {
        /// A new reading (a poll with a report, in the call).
        case reading(QualityReading)
        /// There is no current reading any more: show "measuring", not the last level.
        case unknown
    }

    public private(set) var summary = QualitySummary()
    /// The latest reading, nil before the first and from the moment the call is left.
    public private(set) var reading: QualityReading?
    private var phase: CallPhase = .idle
    private var status: ConnectionStatus = .connected
    private var previous: QualitySample?
    /// Media has flowed since this stretch of `inCall` began: from then on a drop from `connected` is a reconnect.
    private var mediaSeen = false
    /// Up to when the summary accounts for the call (nil: not counting yet, or not in the call).
    private var countedUntilMs: Double?

    public init() {}

    /// Takes one event; returns what the app should show anew, if anything.
    public mutating func handle(_ event: Event) -> Output? {
        switch event {
        case .phase(let next):
            if next == .joining, phase != .joining { summary = QualitySummary() }
            phase = next
            guard next != .inCall else { return nil }
            previous = nil
            countedUntilMs = nil
            mediaSeen = false
            return clearReading()
        case .connectionStatus(let next):
            if phase == .inCall, mediaSeen, status == .connected, next != .connected { summary = summary.addingReconnect() }
            status = next
            return nil
        case .polled(let atMs, let sample):
            guard phase == .inCall else { return nil }
            guard var sample else {
                countGap(until: atMs)
                previous = nil  // the next report measures from itself, not across the gap
                return clearReading()
            }
            if previous == nil { countGap(until: atMs) }
            sample.timestampMs = atMs
            let next = CallQuality.reading(previous: previous, current: sample)
            summary = summary.adding(next)
            previous = sample
            countedUntilMs = atMs
            if next.mediaFlowing { mediaSeen = true }
            reading = next
            return .reading(next)
        }
    }

    private mutating func clearReading() -> Output? {
        guard reading != nil else { return nil }
        reading = nil
        return .unknown
    }

    /// The time since the last counted moment, without a reading to cover it, is time without media.
    private mutating func countGap(until atMs: Double) {
        guard let from = countedUntilMs else { return }
        if atMs > from { summary = summary.addingGap(atMs - from) }
        countedUntilMs = max(from, atMs)
    }
}
