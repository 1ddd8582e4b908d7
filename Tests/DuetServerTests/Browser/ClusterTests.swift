import DuetTestSupport
import Foundation
import Testing

/// The cluster (issue 17): `Tests/e2e/cluster/cluster.py` starts PostgreSQL (`postgres.py`), three `duet serve` nodes
/// sharing it (`--database-url`, `--node-id nodeK`) and nginx with `deploy/nginx/duet-cluster.conf` as it is (only its
/// placeholders replaced, each asserted), in a network namespace of its own (`unshare -n`), and drives headless
/// Chromium through https://duet.test/ with the browser scenarios' machinery. Each scenario records its outcome under
/// .build/results/$DUET_RUN_ID/cluster/ (the failover with its time from the kill to media both ways).
@Suite struct ClusterTests {
    /// Two pages in a call; `kill -9` of the node holding the room; both recover on another node with the same cids,
    /// video and audio both ways again.
    @Test func killedNodeItsRoomRecoversOnAnotherNodeWithTheSameCids() async throws { try await run("failover") }

    /// The same over SSE: each page's stream and every POST carry the room (`/sse?sid=&rid=`) and reach its node.
    @Test func killedNodeItsSSERoomRecoversOnAnotherNodeWithTheSameCids() async throws { try await run("failover-sse") }

    /// The node holding the room gets SIGTERM: `draining`, new sessions refused (passed on by nginx), both pages back
    /// on another node with the same cids, media both ways.
    @Test func drainedNodeItsRoomMovesToAnotherNodeWithTheSameCids() async throws { try await run("drain") }

    /// `end_room`, every node restarted: a reconnect with the saved token gets ROOM_ENDED, through nginx and from
    /// each node directly.
    @Test func anEndedRoomStaysEndedAcrossTheClusterAndItsRestarts() async throws { try await run("end-room", browser: false) }

    /// The home page opened on one node directly shows the live occupancy of a room held by another.
    @Test func homePageOnOneNodeShowsOccupancyOfARoomOnAnother() async throws { try await run("occupancy") }

    private func run(_ scenario: String, browser: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var tools = ["unshare", "ip", "nginx", "openssl", "runuser"]
        if browser { tools.append("chromium") }
        try #require(
            FileManager.default.fileExists(atPath: "/usr/lib/postgresql/15/bin/postgres"),
            "PostgreSQL 15 is required (apt-get install postgresql; the README test command installs it)")
        // Outcomes go to .build/results/$DUET_RUN_ID/cluster/ (Tests/e2e/results.py), never to docs/.
        try await runBrowserScenario(
            script: "cluster/cluster.py", scenario, needs: tools, timeout: .seconds(170), sourceLocation: sourceLocation)
    }
}
