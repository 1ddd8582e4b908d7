import DuetClient
import DuetLock
import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

/// Teardown goes through the same serialized WebRTC queue as every command: the peer connection is closed only
/// after the command in flight has returned, and nothing touches it after the close. (Before, teardown called
/// `close()` beside the queue: a close could land in the middle of a command — in `duet call`, on a freed peer.)
@Suite struct TeardownQueueTests {
    @Test func closeWaitsForTheCommandInFlightAndNothingRunsAfterIt() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let alice = await Participant(server: server, media: media, name: "alice")
        let gated = GatedEngine(await media.makeEngine(name: "bob"))
        let bob = DuetCall(configuration: DuetCall.Configuration(server: server.baseURL), engine: gated)

        await alice.call.startNewCall()
        let roomId = try await waitForValue("alice's room") { await alice.call.roomId }
        await gated.holdNextRemoteDescription()
        await bob.join(roomId: roomId)
        try await waitForValue("bob applying alice's offer") { await gated.holding ? true : nil }

        await bob.leave()
        try await Task.sleep(for: .milliseconds(500))
        #expect(await bob.phase == .ending, "teardown finished while a WebRTC command was still running")
        #expect(!gated.calls.contains("close"), "close() ran beside the command in flight")

        await gated.release()
        try await waitForValue("bob idle") { await bob.phase == .idle ? true : nil }
        let calls = gated.calls
        let applied = try #require(calls.firstIndex(of: "setRemoteDescription:done"))
        let closed = try #require(calls.firstIndex(of: "close"))
        #expect(closed > applied, "\(calls)")
        #expect(calls.suffix(from: closed).allSatisfy { $0 == "close" }, "a command ran after the close: \(calls)")
        await bob.shutdown()
        await alice.finish()
        await media.shutdown()
        await server.stop()
    }

    @discardableResult private func waitForValue<T: Sendable>(_ what: String, _ value: @Sendable () async -> T?) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let found = await value() { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("timed out waiting for \(what)")
    }
}

/// A WebRtcEngine that records every call in order and can hold the next `setRemoteDescription` until released.
final class GatedEngine: WebRtcEngine {
    private let inner: any WebRtcEngine
    private let log = Mutex<[String]>([])
    private let gate = Gate()
    var events: AsyncStream<WebRtcEvent> { inner.events }
    var calls: [String] { log.withLock { $0 } }
    var holding: Bool { get async { await gate.holding } }

    init(_ inner: any WebRtcEngine) { self.inner = inner }

    func holdNextRemoteDescription() async { await gate.arm() }
    func release() async { await gate.open() }

    private func note(_ call: String) { log.withLock { $0.append(call) } }

    func ensurePeerConnection(_ configuration: RtcConfiguration) async throws {
        note("ensurePeerConnection")
        try await inner.ensurePeerConnection(configuration)
    }
    func createOffer(iceRestart: Bool) async throws -> String {
        note("createOffer")
        return try await inner.createOffer(iceRestart: iceRestart)
    }
    func createAnswer() async throws -> String {
        note("createAnswer")
        return try await inner.createAnswer()
    }
    func setRemoteDescription(_ kind: NegotiationMachine.DescriptionKind, sdp: String) async throws {
        note("setRemoteDescription")
        await gate.pass()
        try await inner.setRemoteDescription(kind, sdp: sdp)
        note("setRemoteDescription:done")
    }
    func rollback() async throws {
        note("rollback")
        try await inner.rollback()
    }
    func addRemoteCandidate(_ candidate: IceCandidate?) async throws {
        note("addRemoteCandidate")
        try await inner.addRemoteCandidate(candidate)
    }
    func setConfiguration(_ configuration: RtcConfiguration) async throws {
        note("setConfiguration")
        try await inner.setConfiguration(configuration)
    }
    func close() async {
        note("close")
        await inner.close()
    }
    func stats() async -> CallStats? { await inner.stats() }
}

/// Holds the first caller after `arm()` until `open()`.
actor Gate {
    private var armed = false
    private var waiting: CheckedContinuation<Void, Never>?
    var holding: Bool { waiting != nil }

    func arm() { armed = true }
    func pass() async {
        guard armed else { return }
        armed = false
        await withCheckedContinuation { waiting = $0 }
    }
    func open() {
        waiting?.resume()
        waiting = nil
    }
}
