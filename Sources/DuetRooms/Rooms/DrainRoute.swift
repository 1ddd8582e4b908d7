/// Where a draining node sends each of its rooms (issue 53: "each room moved once").
///
/// Before, a drain told every client "reconnect" and left the choice of node to the proxy: nginx hashes the room onto
/// its ring, skips the nodes it thinks are down, and under load two clients of one room could be sent to two nodes
/// (one of them half out after its own restart), so the room moved twice. Now the draining node names one successor
/// per room in the `draining` message it sends to both clients at once, and the proxy routes `&via=` to that node.
///
/// Rendezvous (highest random weight) hashing: every room goes to the live node with the highest score of
/// (node, room), so a drain spreads its rooms evenly over the other nodes, and the choice needs no coordination — the
/// same inputs give the same node on any process (FNV-1a, not Swift's seeded `Hasher`).
public enum DrainRoute {
    /// The node among `nodes` that `rid` moves to, or nil when there is none (a single node, or no other node alive).
    public static func successor(of rid: String, among nodes: [String]) -> String? {
        // The highest score; on a tie (never seen: 64 bits) the first name, so that every node still agrees.
        nodes.map { (node: $0, score: score(node: $0, rid: rid)) }.max { ($0.score, $1.node) < ($1.score, $0.node) }?.node
    }

    /// FNV-1a (64-bit) of `node`, a NUL, `rid`, then a final avalanche (so that nodes named alike, `node1`/`node2`,
    /// do not score alike for every room).
    static func score(node: String, rid: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in node.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        hash = (hash ^ 0) &* 0x0000_0100_0000_01b3
        for byte in rid.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        // splitmix64's finaliser.
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        return hash ^ (hash >> 31)
    }
}
