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
/// - **A reconnect** is the connection status leaving `connected` while in the call.
/// - **Poll times are the runtime's** (`atMs`, monotonic): a sample's own timestamp is replaced by it, so readings
///   and gaps are measured on one clock.
public struct QualityTracker: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        case phase(CallPhase)
        case connectionStatus(ConnectionStatus)
        /// A stats poll at `atMs`: the engine's sample, or nil when there was no report.
        case polled(atMs: Double, sample: QualitySample?)
    }

    public private(set) var summary = QualitySummary()
    /// The latest reading, nil before the first and from the moment the call is left.
    public private(set) var reading: QualityReading?
    private var phase: CallPhase = .idle
    private var status: ConnectionStatus = .connected
    private var previous: QualitySample?
    /// Up to when the summary accounts for the call (nil: not counting yet, or not in the call).
    private var countedUntilMs: Double?

    public init() {}

    /// Takes one event; returns the reading it produced (only a poll with a report, in the call, makes one).
    public mutating func handle(_ event: Event) -> QualityReading? {
        switch event {
        case .phase(let next):
            if next == .joining, phase != .joining { summary = QualitySummary() }
            if next != .inCall {
                previous = nil
                countedUntilMs = nil
                reading = nil
            }
            phase = next
            return nil
        case .connectionStatus(let next):
            if phase == .inCall, status == .connected, next != .connected { summary = summary.addingReconnect() }
            status = next
            return nil
        case .polled(let atMs, let sample):
            guard phase == .inCall else { return nil }
            guard var sample else {
                countGap(until: atMs)
                previous = nil  // the next report measures from itself, not across the gap
                reading = nil
                return nil
            }
            if previous == nil { countGap(until: atMs) }
            sample.timestampMs = atMs
            let next = CallQuality.reading(previous: previous, current: sample)
            summary = summary.adding(next)
            previous = sample
            countedUntilMs = atMs
            reading = next
            return next
        }
    }

    /// The time since the last counted moment, without a reading to cover it, is time without media.
    private mutating func countGap(until atMs: Double) {
        guard let from = countedUntilMs else { return }
        if atMs > from { summary = summary.addingGap(atMs - from) }
        countedUntilMs = max(from, atMs)
    }
}
