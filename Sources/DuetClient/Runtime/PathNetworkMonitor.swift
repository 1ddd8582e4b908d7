#if canImport(Network)
    import Network
    import Synchronization

    /// `NetworkMonitor` on Apple platforms: `NWPathMonitor` mapped onto the engine's three events.
    /// `.satisfied` after anything else → `.online`; a different set of interfaces while satisfied
    /// (Wi-Fi ↔ cellular) → `.pathChanged`; anything else → `.offline`.
    @available(macOS 15, iOS 18, *)
    public final class PathNetworkMonitor: NetworkMonitor {
        public let events: AsyncStream<NetworkEvent>
        private let monitor: NWPathMonitor

        public init(queue: DispatchQueue = DispatchQueue(label: "duet.network-monitor")) {
            let (events, continuation) = AsyncStream<NetworkEvent>.makeStream()
            self.events = events
            let monitor = NWPathMonitor()
            self.monitor = monitor
            let last = LastPath()
            monitor.pathUpdateHandler = { path in
                if let event = last.update(satisfied: path.status == .satisfied, interfaces: path.availableInterfaces.map(\.name)) {
                    continuation.yield(event)
                }
            }
            continuation.onTermination = { _ in monitor.cancel() }
            monitor.start(queue: queue)
        }

        deinit { monitor.cancel() }
    }

    /// The previous path report, to turn reports into changes.
    @available(macOS 15, iOS 18, *)
    private final class LastPath: Sendable {
        private let state = Mutex<(satisfied: Bool?, interfaces: [String])>((nil, []))

        func update(satisfied: Bool, interfaces: [String]) -> NetworkEvent? {
            state.withLock { previous in
                defer { previous = (satisfied, interfaces) }
                switch (previous.satisfied, satisfied) {
                case (nil, _): return nil  // the first report is the starting point
                case (false?, true): return .online
                case (true?, false): return .offline
                case (false?, false): return nil
                case (true?, true): return previous.interfaces == interfaces ? nil : .pathChanged
                }
            }
        }
    }
#endif
