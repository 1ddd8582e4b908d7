/// The join attempt's timers (000 §5/§6 scenario 8, §9 summary): snapshot ≤ 2 s, push endpoint
/// ≤ 250 ms, kickstart at 1.2 s, recovery at 4 s after sending `join`, hard timeout at 15 s.
public struct JoinMachine: Sendable, Equatable {
    public struct Options: Sendable, Equatable {
        /// The app prepares a join snapshot (e.g. a preview frame id).
        public var prepareSnapshot: Bool
        /// The app can get a push endpoint to include in `join`.
        public var pushSupported: Bool
        public init(prepareSnapshot: Bool = false, pushSupported: Bool = false) {
            self.prepareSnapshot = prepareSnapshot
            self.pushSupported = pushSupported
        }
    }

    public enum Event: Sendable, Equatable {
        case start(Options)
        case snapshotReady(String?)
        case pushEndpointReady(String?)
        case signalingOpened
        case signalingClosed
        /// `joined` arrived.
        case acknowledged
        case cancel
        case timerFired(TimerID)
    }

    public enum Action: Sendable, Equatable {
        case prepareSnapshot
        case requestPushEndpoint
        case ensureSignalingConnection
        case sendJoin(snapshotId: String?, pushEndpoint: String?)
        /// Ack received but the phase is still Joining: move it on.
        case promote
        case fail
        case timer(TimerCommand)
    }

    enum Stage: Sendable, Equatable {
        case idle, preparingSnapshot, awaitingPushEndpoint, readyToSend, sent, acknowledged, failed
    }

    private(set) var stage: Stage = .idle
    private var options = Options()
    private var snapshotId: String?
    private var pushEndpoint: String?
    private var signalingOpen = false
    private var kickstarted = false

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch (stage, event) {
        case (.idle, .start(let options)), (.failed, .start(let options)), (.acknowledged, .start(let options)):
            self.options = options
            snapshotId = nil
            pushEndpoint = nil
            kickstarted = false
            let timers: [Action] = [
                .timer(.schedule(.joinHardTimeout, afterMs: ResilienceConstants.JOIN_HARD_TIMEOUT_MS)),
                .timer(.schedule(.joinKickstart, afterMs: ResilienceConstants.JOIN_CONNECT_KICKSTART_MS)),
            ]
            if options.prepareSnapshot {
                stage = .preparingSnapshot
                return timers + [
                    .prepareSnapshot, .timer(.schedule(.snapshotPrepare, afterMs: ResilienceConstants.SNAPSHOT_PREPARE_TIMEOUT_MS)),
                ]
            }
            return timers + afterSnapshot()
        case (.preparingSnapshot, .snapshotReady(let id)):
            snapshotId = id
            return [.timer(.cancel(.snapshotPrepare))] + afterSnapshot()
        case (.preparingSnapshot, .timerFired(.snapshotPrepare)):
            return afterSnapshot()
        case (.awaitingPushEndpoint, .pushEndpointReady(let endpoint)):
            pushEndpoint = endpoint
            return [.timer(.cancel(.pushEndpointWait))] + trySend()
        case (.awaitingPushEndpoint, .timerFired(.pushEndpointWait)):
            return trySend()
        case (_, .signalingOpened):
            signalingOpen = true
            return stage == .readyToSend || stage == .sent ? send() : []
        case (_, .signalingClosed):
            signalingOpen = false
            if stage == .sent { stage = .readyToSend }  // re-sent once the link is back
            return []
        case (.preparingSnapshot, .timerFired(.joinKickstart)), (.awaitingPushEndpoint, .timerFired(.joinKickstart)),
            (.readyToSend, .timerFired(.joinKickstart)):
            guard !signalingOpen, !kickstarted else { return [] }
            kickstarted = true
            return [.ensureSignalingConnection]
        case (.sent, .timerFired(.joinRecovery)), (.readyToSend, .timerFired(.joinRecovery)):
            return signalingOpen ? send() : [.ensureSignalingConnection]
        case (.acknowledged, .timerFired(.joinRecovery)):
            return [.promote]
        case (.preparingSnapshot, .timerFired(.joinHardTimeout)), (.awaitingPushEndpoint, .timerFired(.joinHardTimeout)),
            (.readyToSend, .timerFired(.joinHardTimeout)), (.sent, .timerFired(.joinHardTimeout)):
            stage = .failed
            return [.fail] + cancelAll()
        case (.sent, .acknowledged), (.readyToSend, .acknowledged):
            stage = .acknowledged
            return cancelAll()
        case (_, .cancel):
            stage = .idle
            return cancelAll()
        default:
            return []
        }
    }

    private mutating func afterSnapshot() -> [Action] {
        if options.pushSupported {
            stage = .awaitingPushEndpoint
            return [.requestPushEndpoint, .timer(.schedule(.pushEndpointWait, afterMs: ResilienceConstants.JOIN_PUSH_ENDPOINT_WAIT_MS))]
        }
        return trySend()
    }

    private mutating func trySend() -> [Action] {
        stage = .readyToSend
        return signalingOpen ? send() : [.ensureSignalingConnection]
    }

    private mutating func send() -> [Action] {
        stage = .sent
        return [
            .sendJoin(snapshotId: snapshotId, pushEndpoint: pushEndpoint),
            .timer(.schedule(.joinRecovery, afterMs: ResilienceConstants.JOIN_RECOVERY_MS)),
        ]
    }

    private func cancelAll() -> [Action] {
        [.joinKickstart, .joinRecovery, .joinHardTimeout, .snapshotPrepare, .pushEndpointWait].map { .timer(.cancel($0)) }
    }
}
