/// Which rooms a core holds when one server runs several cores, one per shard of its rooms (the server's hub, issue 33).
/// A room belongs to one shard, by its id's `hashValue`: SipHash under a key drawn for each process, so nobody can pick
/// room ids (`/api/room-id` is free) that crowd one shard, and every core of the process agrees. A single core holds
/// every room (`whole`), as does every node of a cluster.
public struct RoomShard: Sendable, Equatable {
    public let index: Int
    public let count: Int

    public static let whole = RoomShard(index: 0, count: 1)

    public init(index: Int, count: Int) {
        precondition(count >= 1 && (0..<count).contains(index), "shard \(index) of \(count)")
        self.index = index
        self.count = count
    }

    /// The shard of `rid` among `count`.
    public static func index(of rid: String, count: Int) -> Int {
        count == 1 ? 0 : Int(UInt(bitPattern: rid.hashValue) % UInt(count))
    }

    public func holds(_ rid: String) -> Bool { count == 1 || Self.index(of: rid, count: count) == index }
}
