import DuetClient
import DuetProtocol

/// The state of one side's network, as the active faults leave it. Faults can overlap, so each is a
/// counter or a sum that the fault's end undoes.
struct PlaneConditions {
    var partitions = 0
    var extraLatencyMs: Int64 = 0
    var jitterMs: Int64 = 0
    var isUp: Bool { partitions == 0 }
}

struct SideNetwork {
    var signaling = PlaneConditions()
    var media = PlaneConditions()
    var lossPercent = 0
    var duplicateAndReorder = 0
    /// Bumped by a network change: sockets and ICE candidates of an older path are dead.
    var pathEpoch = 0
    /// Offline after a network change, until the new path comes up.
    var offline = 0
    var joinsToLose = 0

    func plane(_ plane: Plane) -> PlaneConditions { plane == .media ? media : signaling }
    var signalingUp: Bool { signaling.isUp && offline == 0 }
    var mediaUp: Bool { media.isUp && offline == 0 }
}

/// One signaling connection (a WebSocket, or an SSE stream with its POSTs) as both ends see it.
final class SimConnection {
    enum DownItem {
        case message(Envelope)
        /// The server closed the connection (`byServer`), or its process died (a reset).
        case closed(byServer: Bool)
        /// Close 4001 (WebSocket) or `: close 4001` (SSE): a newer connection proved the same seat.
        case replaced
        /// SSE comment: proof of life only.
        case comment
    }

    let id: UInt64
    let side: Side
    let kind: SignalingTransport
    let clientGeneration: Int
    /// The server process that accepted it.
    var serverIncarnation: Int
    let pathEpoch: Int
    var clientOpen = true
    var serverOpen = false
    var upstreamDead = false
    var downstreamDead = false
    var lastUpArrival: Int64 = 0
    var lastDownArrival: Int64 = 0
    var lastHeardByServer: Int64
    var lastHeardByClient: Int64
    /// Bytes TCP holds while a partition lasts, delivered in order when it heals.
    var heldUp: [() -> Void] = []
    var heldDown: [() -> Void] = []
    /// SSE: POSTs not yet answered (the first is in flight).
    var postQueue: [Envelope] = []
    var whenPostsDrained: [() -> Void] = []

    func postsDrained() {
        let waiting = whenPostsDrained
        whenPostsDrained = []
        waiting.forEach { $0() }
    }

    init(id: UInt64, side: Side, kind: SignalingTransport, clientGeneration: Int, serverIncarnation: Int, pathEpoch: Int, now: Int64) {
        self.id = id
        self.side = side
        self.kind = kind
        self.clientGeneration = clientGeneration
        self.serverIncarnation = serverIncarnation
        self.pathEpoch = pathEpoch
        lastHeardByServer = now
        lastHeardByClient = now
    }
}
