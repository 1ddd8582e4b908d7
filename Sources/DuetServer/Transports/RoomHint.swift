/// The room a connection comes for, as its URL names it (`/ws?rid=`, `/sse?sid=&rid=`): the same hint a cluster's
/// nginx routes by (deploy/nginx/duet-cluster.conf), here choosing the hub's shard the connection starts in
/// (`SessionHub`). Only a hint: nothing trusts it, and a join for another room moves the connection there.
enum RoomHint {
    /// `rid` from the query of `path`, when present and of a room id's size.
    static func rid(in path: String?) -> String? {
        guard let path, let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "rid", !parts[1].isEmpty, parts[1].utf8.count <= 128 else { continue }
            return String(parts[1]).removingPercentEncoding
        }
        return nil
    }
}
