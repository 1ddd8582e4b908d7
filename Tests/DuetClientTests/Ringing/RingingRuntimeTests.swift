import DuetClient
import DuetProtocol
import DuetServer
import DuetTestSupport
import Foundation
import Testing

/// Ringing with the Swift engine against the real server (issue 31): a `DuetCall` rings, a `RingListener` (what an
/// app drives CallKit with) hears it with the caller's verified name, answers, and each side sees how it ended.
@Suite(.serialized) struct RingingRuntimeTests {
    static let calleeDevice = "swift-callee-device-01"
    static let callerDevice = "swift-caller-device-02"

    /// Both have been in the call (member tokens), then left; Alice is back, alone, and Bob's app listens.
    func setUp(_ server: TestServer, media: SimulatedMediaNetwork) async throws -> (
        caller: DuetCall, listener: RingListener, roomId: String, key: LinkKey
    ) {
        let key = LinkKey.random()
        func call(_ device: String, quiet: Bool = false) async -> DuetCall {
            var configuration = DuetCall.Configuration(server: server.baseURL)
            configuration.linkKey = key
            configuration.deviceId = device
            configuration.quietJoin = quiet
            return DuetCall(configuration: configuration, engine: await media.makeEngine(name: device))
        }
        let roomId = try await server.roomId()
        let bob = await call(Self.calleeDevice)
        await bob.join(roomId: roomId)
        let token = try await eventually("Bob's member token") { await bob.memberToken }
        await bob.leave()
        await bob.shutdown()
        let alice = await call(Self.callerDevice, quiet: true)
        await alice.join(roomId: roomId)
        _ = try await eventually("Alice waits") { await alice.phase == .waiting ? true : nil }
        let listener = RingListener(
            server: server.baseURL, deviceId: Self.calleeDevice, calls: [.init(roomId: roomId, memberToken: token, key: key)])
        return (alice, listener, roomId, key)
    }

    /// What a stream gave so far, read with a deadline (a ring that never comes fails the test, never hangs it).
    actor Recorder<Element: Sendable & Equatable> {
        private(set) var seen: [Element] = []
        func add(_ element: Element) { seen.append(element) }
        static func recording(_ stream: AsyncStream<Element>) -> Recorder {
            let recorder = Recorder()
            Task { for await element in stream { await recorder.add(element) } }
            return recorder
        }
        func first(where predicate: @Sendable (Element) -> Bool) -> Element? { seen.first(where: predicate) }
    }

    func incoming(_ heard: Recorder<RingListener.Event>) async throws -> IncomingCall {
        try await eventually("an incoming call") {
            await heard.first { if case .incoming = $0 { true } else { false } }.flatMap {
                if case .incoming(let call) = $0 { call } else { nil }
            }
        }
    }

    func finalState(_ updates: Recorder<DuetCall.RingUpdate>) async throws -> String {
        try await eventually("the ring's end, for the caller") { await updates.first { $0.state != "ringing" }?.state }
    }

    @Test func aRingIsHeardWithTheVerifiedNameAndItsDeclineReachesTheCaller() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let (alice, listener, roomId, _) = try await setUp(server, media: media)
        let heard = Recorder.recording(listener.events)
        await listener.start()
        _ = try await eventually("listening") { await heard.first { $0 == .listening } }
        let updates = Recorder.recording(alice.ringUpdates)
        try await alice.ring(callId: "swift-call-1", callerName: "Alice")
        _ = try await eventually("ringing") { await updates.first { $0.state == "ringing" } }
        let call = try await incoming(heard)
        #expect(call.roomId == roomId && call.callId == "swift-call-1" && call.caller == .verified("Alice"))
        #expect(call.id == IncomingCall(roomId: roomId, callId: "swift-call-1", caller: .altered, expiresAt: 0).id, "one UUID per ring")
        await listener.decline(call)
        #expect(try await finalState(updates) == "declined")
        _ = try await eventually("the listener hears it ended") { await heard.first { $0 == .ended(call, .declined) } }
        await listener.stop()
        await alice.shutdown()
        await media.shutdown()
        await server.stop()
    }

    @Test func anAcceptedRingIsAcceptedForTheCallerAndAnsweredHere() async throws {
        let server = try await TestServer.start()
        let media = SimulatedMediaNetwork()
        let (alice, listener, _, _) = try await setUp(server, media: media)
        let heard = Recorder.recording(listener.events)
        await listener.start()
        _ = try await eventually("listening") { await heard.first { $0 == .listening } }
        let updates = Recorder.recording(alice.ringUpdates)
        try await alice.ring(callId: "swift-call-2", callerName: "Alice")
        let call = try await incoming(heard)
        await listener.accept(call)
        _ = try await eventually("answered here") { await heard.first { $0 == .ended(call, .acceptedHere) } }
        #expect(try await finalState(updates) == "accepted")
        await listener.stop()
        await alice.shutdown()
        await media.shutdown()
        await server.stop()
    }
}

/// Polls until `value` is non-nil; fails after `timeout`.
func eventually<T: Sendable>(_ what: String, timeout: Duration = .seconds(10), _ value: @Sendable () async -> T?) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
        if let found = await value() { return found }
        guard ContinuousClock.now < deadline else { throw TestFailure("\(what): not within \(timeout)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
