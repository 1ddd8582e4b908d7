#if canImport(Network)
import Network
import Synchronization

/// `NetworkMonitor` on Apple platforms: `NWPathMonitor` mapped onto the engine's three events.
/// `.satisfied` after anything else → `.online`; a different set of interfaces while satisfied
/// (Wi-Fi ↔ cellular) → `.pathChanged`; anything else → `.offline`.
@available(macOS 14, iOS 17, *)
public final class PathNetworkMonitor: NetworkMonitor {
    public let events: AsyncStream<NetworkEvent>
    private let monitor: NWPathMonitor

    public init(queue: DispatchQueue = DispatchQueue(label: "duet.network-monitor")) {
        let (events, continuation) = AsyncStream<NetworkEvent>.makeStream()
        self.events = events
        let monitor = NWPathMonitor()
        self.monitor = monitor
        let last = Mutex<(satisfied: Bool?, interfaces: [String])>((nil, []))
        monitor.pathUpdateHandler = { path in
            let satisfied = path.status == .satisfied
            let interfaces = path.availableInterfaces.map(\.name)
            let event: NetworkEvent? = last.withLock { previous in
                defer { previous = (satisfied, interfaces) }
                switch (previous.satisfied, satisfied) {
                case (nil, _): return nil  // the first report is the starting point
                case (false?, true): return .online
                case (true?, false), (false?, false): return previous.satisfied == true ? .offline : nil
                case (true?, true): return previous.interfaces == interfaces ? nil : .pathChanged
                }
            }
            if let event { continuation.yield(event) }
        }
        continuation.onTermination = { _ in monitor.cancel() }
        monitor.start(queue: queue)
    }

    deinit { monitor.cancel() }
}
#endif
